"""Structured events: the library reports progress through these, the CLI renders them.

Library code never prints. A function that has something to say takes an ``emit`` callable
(:data:`Emit`) and calls it with an :class:`Event`; :func:`discard` is the default.

Per-item progress (a job built, a group of cases checked, a point timed, a wheel fetched) is one
kind of event, made by :func:`progress`: its ``data`` says how far (``done`` of ``total``, the
``item``, its ``status``, ``seconds``), and its ``message`` is the one plain-text rendering
(:func:`progress_message`) that logs show, so every stage reads alike:
``[2/4] saxpy/triton/float32: cases 0-75, none bad in 0.2 s``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "Emit",
    "Event",
    "Level",
    "collect",
    "discard",
    "progress",
    "progress_message",
]

Level = Literal["debug", "info", "warning", "error", "progress", "group-start", "group-end"]


@dataclass(frozen=True, slots=True, kw_only=True)
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
    warning), ``failed`` one that failed what was asked (rendered as an error); ``data`` adds the stage's own fields. Renderers read ``data``; logs show
    ``message`` (:func:`progress_message`)."""
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
