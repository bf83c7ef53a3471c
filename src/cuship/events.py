"""Structured events: the library reports progress through these, the CLI renders them.

Library code never prints. A function that has something to say takes an ``emit`` callable
(:data:`Emit`) and calls it with an :class:`Event`; :func:`discard` is the default.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["Emit", "Event", "Level", "collect", "discard"]

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
