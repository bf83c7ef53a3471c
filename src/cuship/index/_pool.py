"""The index's parallel machinery: per-wheel work spread over the machine's cores, projects
dealt into shares, and a site's files written by a few threads.

Hashing a wheel, pulling its METADATA and inspecting its shared objects is CPU work in Python,
one wheel at a time: a cold index of 50,000 wheels spent most of its time there on one core.
Two ways to spread it: :func:`map_spread` hands chunks of items to forked worker processes and
gets the results back in order (an update's scan); :func:`fork_map` does one whole share of
the work here and gives each other share to a forked child, start to end, getting back only
what it reports (a rebuild: each process reads, writes and renders its own projects; :func:`deal`
makes the shares). Only a run with many wheels pays the start-up, and only where forking is
safe (no other thread running in this process); everywhere else the work runs here, in order,
as before. A child spreads nothing further.

Progress comes back as the work goes: :func:`map_spread` tells of each result as its chunk
comes back, and the shares of a :func:`fork_map` count their items in a :class:`Tally`, a few
integers in memory every forked child shares with this process (no message, no pickling).
:class:`ScanProgress` makes the index's progress events of them: topic ``index``, stage
``scan``, counting the wheels scanned (read and hashed, found in the cache, or skipped); this
process emits the count of all shares as its own share's wheels are scanned (a child only
counts: its events would come back only when it ends), and the renderer picks the lines a
log shows.

Creating files is the other cost: :func:`write_trees` writes a site's pages a batch at a time,
on a few threads when its process writes alone, with the modes every published file and folder
has (:data:`FILE_MODE`, :data:`DIR_MODE`) whatever the umask.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import mmap
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from cuship import _fs
from cuship.events import Emit, progress

if TYPE_CHECKING:
    from concurrent.futures import Executor

# multiprocessing and concurrent.futures are imported where work is spread: a small run (an
# update of a few wheels) never needs them, and the CLI would pay their import at start-up.

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "MIN_ITEMS",
    "Counted",
    "ScanProgress",
    "Tally",
    "deal",
    "fork_map",
    "in_child",
    "make_folders",
    "map_spread",
    "umask_cuts",
    "uncounted",
    "workers_available",
    "write_trees",
]

T = TypeVar("T")
R = TypeVar("R")

DIR_MODE = 0o755  # every folder of a site, whatever the umask
FILE_MODE = 0o644  # every file of a site
MIN_ITEMS = 512  # fewer wheels than this run here: a pool's start-up would cost more
_CHUNKS_PER_WORKER = 8  # small enough to even out slow wheels, large enough to amortise pickling
_IN_CHILD = False  # True in a child fork_map started
_SHARING = False  # True while fork_map runs a share here beside its children


def workers_available() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _fork_safe() -> bool:
    # os.fork is there exactly where multiprocessing offers "fork" (not on Windows); asking
    # multiprocessing would import it, sockets and all, before a rebuild's first share
    return hasattr(os, "fork") and threading.active_count() == 1


def map_spread(
    fn: Callable[[T], R],
    items: Sequence[T],
    *,
    min_items: int = MIN_ITEMS,
    each: Callable[[int], None] | None = None,
) -> list[R]:
    """``[fn(item) for item in items]``, on forked workers when there are enough items;
    ``each(i)`` is called here as the result of ``items[i]`` comes back (from workers, a chunk
    at a time, in order).

    ``fn`` must be a module-level function whose results pickle, and must not raise: return the
    failure as a value (exceptions with extra constructor arguments do not pickle back)."""
    workers = workers_available()
    if workers < 2 or len(items) < min_items or _IN_CHILD or _SHARING or not _fork_safe():
        return _told(map(fn, items), each)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    chunk = max(1, len(items) // (workers * _CHUNKS_PER_WORKER))
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        return _told(pool.map(fn, items, chunksize=chunk), each)


def _told(results: Iterable[R], each: Callable[[int], None] | None) -> list[R]:
    if each is None:
        return list(results)
    done = []
    for index, result in enumerate(results):
        done.append(result)
        each(index)
    return done


class Tally:
    """``slots`` counts that this process and the children it forks afterwards share: each
    share adds to its own slot (one writer each), and any process reads them all."""

    def __init__(self, slots: int) -> None:
        memory = mmap.mmap(-1, 8 * max(1, slots))  # anonymous, shared with children
        self._counts = memoryview(memory).cast("q")  # 64-bit integers

    def add(self, slot: int, count: int) -> None:
        self._counts[slot] += count

    def total(self) -> int:
        return sum(self._counts)


Counted = Callable[[int, str], None]
"""Told that ``count`` more files were scanned, the last of them named ``item``."""


def uncounted(count: int, item: str) -> None:
    """A :data:`Counted` that keeps no count."""
    del count, item


_STEPS = 1000  # progress events in a scan at most: a bar has fewer columns than that


class ScanProgress:
    """The scan of ``total`` files, told to ``emit``, in ``shares`` processes at most: an event
    each time another thousandth of the files is done (each file of a scan of up to 1,000; an
    event costs this process about 10 µs, a wheel's read about 200 µs of a core)."""

    def __init__(self, total: int, emit: Emit, *, shares: int = 1) -> None:
        self.total, self.emit = total, emit
        self._tally = Tally(shares)
        self._started = time.monotonic()
        self._step = max(1, total // _STEPS)
        self._next = 1

    def counter(self, slot: int) -> Counted:
        """What share ``slot`` tells of its files, called in the process that scans them."""
        if in_child():
            return lambda count, item: self._tally.add(slot, count)

        def counted(count: int, item: str) -> None:
            self._tally.add(slot, count)
            done = self._tally.total()
            if self._next <= done < self.total:  # the last line is finish's
                self._next = done + self._step
                self._emit(done, item)

        return counted

    def finish(self, read: int, cached: int) -> None:
        """The last line, once every share is done: how many files were read, how many not."""
        seconds = time.monotonic() - self._started
        status = f"{read} read, {cached} from the cache"
        if self.total:
            self._emit(self.total, "wheels", status, seconds)

    def _emit(
        self, done: int, item: str, status: str | None = None, seconds: float | None = None
    ) -> None:
        self.emit(progress("index", done, self.total, item, status, seconds, stage="scan"))


def in_child() -> bool:
    """Whether this process is a child :func:`fork_map` started (its work runs here, serially:
    the children already share the cores)."""
    return _IN_CHILD


def fork_map(fn: Callable[[T], R], shares: Sequence[T]) -> list[R]:
    """``[fn(share) for share in shares]``: the first share here, each other share at the
    same time in a forked child. The children see this process's memory as it was when they
    started (nothing is pickled to them) and each pickles its result back. Raises what the
    share here raised, or else what a child raised (pickled back; a child that died says
    how), after every child has ended. Where forking is not safe, every share runs here.

    No cycle is collected while a share runs here (nor in a child: see :func:`_fork`): a
    share is a bounded piece of work whose objects live until it ends.

    A child ends with ``os._exit``: nothing it buffered (events, a cache) is flushed and
    nothing it changed in memory comes back but its result. A :func:`map_spread` in a share,
    here or in a child, runs serially: the shares already have the cores."""
    if len(shares) < 2 or not _fork_safe():
        return [_uncollected(fn, share) for share in shares]
    global _SHARING  # one fork_map at a time: forking needs a single thread
    children: list[tuple[int, int]] = []
    try:
        for share in shares[1:]:
            children.append(_fork(fn, share))
        _SHARING = True  # the share here spreads nothing further: the children have the cores
        first = _uncollected(fn, shares[0])
    finally:
        _SHARING = False
        outcomes = [_reap(pid, fd) for pid, fd in children]
    results: list[R] = [first]
    for ok, value in outcomes:
        if not ok:
            assert isinstance(value, BaseException)
            raise value
        results.append(value)  # type: ignore[arg-type]  # the child's fn(share)
    return results


def _uncollected(fn: Callable[[T], R], share: T) -> R:
    """``fn(share)`` with the cycle collector paused (as it was, after)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return fn(share)
    finally:
        if enabled:
            gc.enable()


def _fork(fn: Callable[[T], R], share: T) -> tuple[int, int]:
    global _IN_CHILD
    import pickle  # here, before the fork: a run that forks nothing needs none

    read, write = os.pipe()
    pid = os.fork()
    if pid != 0:
        os.close(write)
        return pid, read
    status = 0  # the child, from here to os._exit
    # No cycle collection in the child: it lives for one share and its memory goes back when
    # it ends; collecting costs a share of 50,000 wheels about 7 % of its time, and each pass
    # would touch (and so copy) every page of objects it shares with the parent.
    gc.disable()
    try:
        os.close(read)
        _IN_CHILD = True
        message = pickle.dumps((True, fn(share)), protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException as err:  # every failure goes back to the parent
        status = 1
        try:
            message = pickle.dumps((False, err))
            pickle.loads(message)  # one that pickles but cannot be made again (required args)
        except Exception:  # an exception that does not pickle: its words
            message = pickle.dumps((False, RuntimeError(f"{type(err).__name__}: {err}")))
    try:
        with open(write, "wb") as pipe:
            pipe.write(message)
    finally:
        os._exit(status)


def _reap(pid: int, fd: int) -> tuple[bool, object]:
    """Wait for one child: (True, its result) or (False, its failure)."""
    import pickle

    with open(fd, "rb") as pipe:
        message = pipe.read()
    _pid, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    outcome = None
    if message:
        try:
            outcome = pickle.loads(message)  # our own child's bytes, through a pipe
        except Exception:  # worded below
            outcome = None
    ok = code == 0
    said = isinstance(outcome, tuple) and len(outcome) == 2 and outcome[0] is ok
    if said and (ok or isinstance(outcome[1], BaseException)):  # type: ignore[index]
        return outcome  # type: ignore[return-value]
    from cuship.process import ended

    return False, RuntimeError(f"a forked worker {ended(code)} without saying why")


def deal(sizes: Mapping[str, int], count: int) -> list[list[str]]:
    """The keys of ``sizes`` dealt into at most ``count`` shares of even total size: the
    largest first, each to the share with least so far (ties by key). Empty shares are left out."""
    load = [0] * count
    dealt: list[list[str]] = [[] for _ in range(count)]
    for key in sorted(sizes, key=lambda k: (-sizes[k], k)):
        least = load.index(min(load))
        load[least] += sizes[key]
        dealt[least].append(key)
    return [share for share in dealt if share]


_WRITERS = 2  # threads creating files (see write_trees)


def _write_file(path: str, content: bytes, chmod: bool) -> None:
    # Plain os calls: thousands of small files, and pathlib's costs show.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
    try:
        if chmod:
            os.fchmod(fd, FILE_MODE)
        done = os.write(fd, content)  # the whole page, nearly always
        if done < len(content):
            view = memoryview(content)[done:]
            while view:
                view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _write_files(items: Sequence[tuple[str, bytes]], chmod: bool) -> None:
    for path, content in items:
        _write_file(path, content, chmod)


_BATCH = 4096  # files rendered and held at once (a 50,000-wheel index renders ~105,000)
_THREADED = 256  # fewer files than this are written by one thread


def write_trees(
    root: Path, trees: Iterable[Mapping[str, bytes]], made: set[str], *, threads: bool = True
) -> None:
    """The files of each tree under ``root``, a batch at a time (pages are rendered as they
    are written, not all held), folders first and 0755 whatever the umask; ``made``: the
    folders made so far (updated).

    Creating a file is a filesystem round trip that releases the GIL, so with ``threads`` a
    batch is split between a few threads: on this project's two-core ext4 machine two threads
    create the ~10,000 files of a 5,000-wheel index in 0.6x the time one takes (more were
    slower). A forked child that shares the cores with others writes alone."""
    base = f"{root}/"
    workers = min(_WRITERS, os.cpu_count() or 1) if threads else 1
    file_chmod, dir_chmod = umask_cuts(FILE_MODE), umask_cuts(DIR_MODE)
    batch: list[tuple[str, bytes]] = []
    pool: Executor | None = None
    with contextlib.ExitStack() as stack:

        def flush() -> None:
            nonlocal pool
            if pool is None and workers > 1 and len(batch) >= _THREADED:
                # imported here: a share beside others writes alone, and a few files (the
                # roots) are written before a pool would have started
                from concurrent.futures import ThreadPoolExecutor

                pool = stack.enter_context(ThreadPoolExecutor(workers))
            if pool is None:
                _write_files(batch, file_chmod)
            else:
                share = -(-len(batch) // workers)
                parts = [batch[i : i + share] for i in range(0, len(batch), share)]
                for _ in pool.map(_write_files, parts, itertools.repeat(file_chmod)):
                    pass
            batch.clear()

        for tree in trees:
            for rel, content in tree.items():
                folder = rel.rpartition("/")[0]
                if folder and folder not in made:
                    make_folders(root, folder, made, dir_chmod)
                batch.append((base + rel, content))
            if len(batch) >= _BATCH:
                flush()
        if batch:
            flush()


def make_folders(root: Path, folder: str, made: set[str], chmod: bool) -> None:
    """``folder`` and its parents under ``root``, 0755: ``chmod`` when the umask cuts that.
    One that is there already was made by another share of the same build."""
    missing = []
    while folder and folder not in made:
        missing.append(folder)
        folder = folder.rpartition("/")[0]
    base = f"{root}/"
    for path in reversed(missing):
        try:
            os.mkdir(base + path, DIR_MODE)  # noqa: PTH102 - os calls: 25,000 folders
        except FileExistsError:  # another share made it (a label's folder): it is 0755 too
            made.add(path)
            continue
        if chmod:
            os.chmod(base + path, DIR_MODE)  # noqa: PTH101
        made.add(path)


def umask_cuts(mode: int) -> bool:
    """Whether the process umask takes bits off ``mode`` (then a chmod must put them back)."""
    return bool(_fs.umask() & mode)
