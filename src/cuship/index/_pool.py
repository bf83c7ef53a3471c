"""Spread per-wheel work of a large index run over the machine's cores.

Hashing a wheel, pulling its METADATA and inspecting its shared objects is CPU work in Python,
one wheel at a time: a cold index of 50,000 wheels spent most of its time there on one core.
Two ways to spread it: :func:`map_spread` hands chunks of items to forked worker processes and
gets the results back in order (an update's scan); :func:`fork_map` does one whole share of
the work here and gives each other share to a forked child, start to end, getting back only
what it reports (a rebuild: each process reads, writes and renders its own projects). Only a run with many wheels pays the
start-up, and only where forking is safe (no other thread running in this process);
everywhere else the work runs here, in order, as before. A child spreads nothing further.
"""

from __future__ import annotations

import gc
import os
import pickle
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

# multiprocessing and concurrent.futures are imported where work is spread: a small run (an
# update of a few wheels) never needs them, and the CLI would pay their import at start-up.

__all__ = ["MIN_ITEMS", "fork_map", "in_child", "map_spread", "workers_available"]

T = TypeVar("T")
R = TypeVar("R")

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


def map_spread(fn: Callable[[T], R], items: Sequence[T], *, min_items: int = MIN_ITEMS) -> list[R]:
    """``[fn(item) for item in items]``, on forked workers when there are enough items.

    ``fn`` must be a module-level function whose results pickle, and must not raise: return the
    failure as a value (exceptions with extra constructor arguments do not pickle back)."""
    workers = workers_available()
    if workers < 2 or len(items) < min_items or _IN_CHILD or _SHARING or not _fork_safe():
        return [fn(item) for item in items]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    chunk = max(1, len(items) // (workers * _CHUNKS_PER_WORKER))
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        return list(pool.map(fn, items, chunksize=chunk))


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
    how = f"was killed by signal {-code}" if code < 0 else f"exited {code}"
    return False, RuntimeError(f"a forked worker {how} without saying why")
