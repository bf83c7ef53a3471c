"""Spread per-wheel work of a large index run over the machine's cores.

Hashing a wheel, pulling its METADATA and inspecting its shared objects is CPU work in Python,
one wheel at a time: a cold index of 50,000 wheels spent most of its time there on one core.
Forked worker processes take chunks of the wheels; results come back in order. Only a run with
many wheels pays the start-up, and only where forking is safe (no other thread running in this
process); everywhere else the work runs here, in order, as before.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

__all__ = ["MIN_ITEMS", "fork_each", "map_spread", "workers_available"]

T = TypeVar("T")
R = TypeVar("R")

MIN_ITEMS = 512  # fewer wheels than this run here: a pool's start-up would cost more
_CHUNKS_PER_WORKER = 8  # small enough to even out slow wheels, large enough to amortise pickling


def workers_available() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _fork_safe() -> bool:
    return "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1


def map_spread(fn: Callable[[T], R], items: Sequence[T], *, min_items: int = MIN_ITEMS) -> list[R]:
    """``[fn(item) for item in items]``, on forked workers when there are enough items.

    ``fn`` must be a module-level function whose results pickle, and must not raise: return the
    failure as a value (exceptions with extra constructor arguments do not pickle back)."""
    workers = workers_available()
    if workers < 2 or len(items) < min_items or not _fork_safe():
        return [fn(item) for item in items]
    chunk = max(1, len(items) // (workers * _CHUNKS_PER_WORKER))
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        return list(pool.map(fn, items, chunksize=chunk))


def fork_each(
    fn: Callable[[T], None], shares: Sequence[T], *, meanwhile: Callable[[], None]
) -> None:
    """``fn(share)`` for each share, each in a forked child, while this process runs
    ``meanwhile``; the children see this process's memory as it was (nothing is pickled to
    them). Raises what a child raised (pickled back; a child that died says how), or what
    ``meanwhile`` raised, after every child has ended. With one share, or where forking is not
    safe, everything runs here, ``meanwhile`` first.

    A child must only write files: it ends with ``os._exit``, so nothing it buffered (events,
    a cache) is flushed, and nothing it changed in memory comes back."""
    if len(shares) < 2 or not _fork_safe():
        meanwhile()
        for share in shares:
            fn(share)
        return
    children: list[tuple[int, int]] = []
    try:
        for share in shares:
            children.append(_fork(fn, share))
        meanwhile()
    finally:
        failures = [_reap(pid, fd) for pid, fd in children]
    for failure in failures:
        if failure is not None:
            raise failure


def _fork(fn: Callable[[T], None], share: T) -> tuple[int, int]:
    read, write = os.pipe()
    pid = os.fork()
    if pid != 0:
        os.close(write)
        return pid, read
    status = 0  # the child, from here to os._exit
    try:
        os.close(read)
        fn(share)
    except BaseException as err:  # every failure goes back to the parent
        status = 1
        try:
            message = pickle.dumps(err)
        except Exception:  # an exception that does not pickle: its words
            message = pickle.dumps(RuntimeError(f"{type(err).__name__}: {err}"))
        with open(write, "wb") as pipe:
            pipe.write(message)
    finally:
        os._exit(status)


def _reap(pid: int, fd: int) -> BaseException | None:
    """Wait for one child; its failure, if it failed."""
    with open(fd, "rb") as pipe:
        message = pipe.read()
    _pid, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code == 0:
        return None
    if message:
        try:
            error = pickle.loads(message)  # our own child's bytes, through a pipe
        except Exception:  # worded below
            error = None
        if isinstance(error, BaseException):
            return error
    how = f"was killed by signal {-code}" if code < 0 else f"exited {code}"
    return RuntimeError(f"a forked worker {how} without saying why")
