"""Open files and the server: each connection holds a descriptor, so the process's open-file
limit (``RLIMIT_NOFILE``) bounds the connections a server may take on. :func:`more_descriptors`
raises the soft limit toward what the limits want; :func:`within_descriptors` lowers
``max_connections`` to what the limit there is allows."""

from __future__ import annotations

import resource

from cuship.events import Emit, Event
from cuship.serve._server import ServeLimits

__all__ = ["SPARE", "descriptors_wanted", "more_descriptors", "within_descriptors"]

SPARE = 64  # descriptors besides connections and workers: the socket, files being sent, logs


def descriptors_wanted(limits: ServeLimits) -> int:
    """The open files a server with ``limits`` may hold at once."""
    return limits.max_connections + limits.workers + SPARE


def more_descriptors(wanted: int) -> int:
    """Raise this process's soft open-file limit toward ``wanted`` (never above the hard
    limit, never lowering it); the soft limit in force afterwards. A refusal keeps the limit
    there is (:func:`within_descriptors` serves within it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return soft
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target <= soft:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError):
        return soft
    return target


def within_descriptors(limits: ServeLimits, emit: Emit) -> ServeLimits:
    """``limits`` with ``max_connections`` lowered to what this process may open."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return limits
    room = soft - limits.workers - SPARE
    if limits.max_connections <= room:
        return limits
    message = f"serving at most {max(room, 1)} connections at once (open file limit {soft})"
    emit(Event(level="debug", topic="serve", message=message))
    return ServeLimits(
        workers=limits.workers,
        idle_timeout=limits.idle_timeout,
        max_connections=max(room, 1),
        backlog=limits.backlog,
    )
