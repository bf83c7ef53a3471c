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
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

__all__ = ["MIN_ITEMS", "map_spread", "workers_available"]

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
