"""Structured events: the library reports progress through these, the CLI renders them.

Library code never prints. A function that has something to say takes an ``emit`` callable
(:data:`Emit`) and calls it with an :class:`Event`; :func:`discard` is the default.

Per-item progress (a job built, a group of cases checked, a point timed, a wheel fetched) is one
kind of event, made by :func:`progress`: its ``data`` says how far (``done`` of ``total``, the
``item``, its ``status``, ``seconds``), and its ``message`` is the one plain-text rendering
(:func:`progress_message`) that logs show, so every stage reads alike:
``[2/4] saxpy/triton/float32: cases 0-75, none bad in 0.2 s``.

A log (a CI's, a pipe's) shows the progress events a :class:`Cadence` admits, so a topic of
thousands of items (the index's wheels, a download's megabytes) does not flood it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from cuship._record import frozen

__all__ = [
    "INTERVAL",
    "Cadence",
    "Emit",
    "Event",
    "Level",
    "collect",
    "count_of",
    "discard",
    "progress",
    "progress_interval",
    "progress_message",
]

Level = Literal["debug", "info", "warning", "error", "progress", "group-start", "group-end"]


@frozen
class Event:
    """One thing that happened. ``topic`` groups events (``build``, ``index``, ...)."""

    level: Level
    topic: str
    message: str
    data: Mapping[str, object] = field(default_factory=dict)


Emit = Callable[[Event], None]


def discard(event: Event) -> None:
    """An :data:`Emit` that drops every event."""
    del event


def collect(into: list[Event]) -> Emit:
    """An :data:`Emit` that appends every event to ``into`` (handy in tests and summaries)."""
    return into.append


def progress_message(
    done: int,
    total: int,
    item: str,
    status: str | None = None,
    seconds: float | None = None,
    *,
    stage: str | None = None,
) -> str:
    """The plain-text line of a progress event: ``[stage done/total] item: status in N.N s``
    (the stage, status and time only where given)."""
    count = f"{stage} {done}/{total}" if stage else f"{done}/{total}"
    said = status or ""
    if seconds is not None:
        said = f"{said} in {seconds:.1f} s" if said else f"{seconds:.1f} s"
    return f"[{count}] {item}: {said}" if said else f"[{count}] {item}"


def progress(
    topic: str,
    done: int,
    total: int,
    item: str,
    status: str | None = None,
    seconds: float | None = None,
    *,
    stage: str | None = None,
    warn: bool = False,
    failed: bool = False,
    data: Mapping[str, object] | None = None,
) -> Event:
    """A per-item progress event (level ``progress``): ``item`` is number ``done`` of ``total``
    in ``topic``, with what became of it (``status``) and how long it took (``seconds``).

    ``stage`` names a pass within the topic (``ncu``, ``sanitize memcheck``) and goes into the
    count; ``warn`` marks an item that went wrong in a way the reader should see (rendered as a
    warning), ``failed`` one that failed what was asked (rendered as an error); ``data`` adds
    the stage's own fields. Renderers read ``data``; logs show ``message``
    (:func:`progress_message`)."""
    fields: dict[str, object] = {**(data or {}), "done": done, "total": total, "item": item}
    for key, value in (("status", status), ("seconds", seconds), ("stage", stage)):
        if value is not None:
            fields[key] = value
    if warn:
        fields["warn"] = True
    if failed:
        fields["failed"] = True
    message = progress_message(done, total, item, status, seconds, stage=stage)
    return Event(level="progress", topic=topic, message=message, data=fields)


INTERVAL = 5.0
"""Seconds between two plain progress lines of one topic: a job that works for an hour logs
720 of them, not one per item (a 50,000-wheel index), and a CI that ends a job silent for some
minutes (CircleCI's ``no_output_timeout``: 10) still sees it alive; work shorter than this shows
its first and last line only."""


def progress_interval(value: str | None) -> float | None:
    """``CUSHIP_PROGRESS_INTERVAL``'s seconds: :data:`INTERVAL` when unset or blank, None when
    it is not a number of seconds (0 or more)."""
    if value is None or not value.strip():
        return INTERVAL
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def count_of(value: object) -> int:
    """A progress event's ``done``/``total``/``bad`` as a count (0 when it is not one)."""
    return value if isinstance(value, int) else 0


def _always(data: Mapping[str, object]) -> bool:
    """An event every log shows: the last item, one that went wrong, the start or end of a
    build's job or a GPU run's stage (a ``phase``)."""
    done, total = count_of(data.get("done")), count_of(data.get("total"))
    went_wrong = bool(data.get("warn") or data.get("failed")) or count_of(data.get("bad")) > 0
    return went_wrong or done >= total or "phase" in data


@dataclass(slots=True)
class Cadence:
    """Which progress events a plain log shows: per topic and stage the first, the last
    (``done`` equal to ``total``), each that went wrong (``warn``, ``failed``, ``bad``) or has a
    ``phase``, and otherwise at most one every ``interval`` seconds of ``clock``."""

    interval: float = INTERVAL
    clock: Callable[[], float] = time.monotonic
    _shown: dict[tuple[str, str], float] = field(default_factory=dict)
    _held: dict[tuple[str, str], Event] = field(default_factory=dict)

    def admit(self, event: Event) -> bool:
        """Whether to print ``event`` now; one not printed is held until a later one is."""
        key = (event.topic, str(event.data.get("stage") or ""))
        now, last = self.clock(), self._shown.get(key)
        if last is None or now - last >= self.interval or _always(event.data):
            self._shown[key] = now
            self._held.pop(key, None)
            return True
        self._held[key] = event
        return False

    def held(self) -> list[Event]:
        """The latest event of each topic that was held back and not followed by a line."""
        events = list(self._held.values())
        self._held.clear()
        return events
