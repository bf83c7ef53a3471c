"""Attributes and dict entries set for a while, put back in reverse order by :meth:`Patches.undo`.

Used by the modules of :mod:`cuship.check.interpret` only.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any

__all__ = ["Patches"]


class Patches:
    """Attributes and dict entries set for a while; :meth:`undo` restores them in reverse."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []

    def attr(self, obj: Any, name: str, value: Any) -> None:
        missing = object()
        old = (
            obj.__dict__.get(name, missing)
            if isinstance(obj, type)
            else getattr(obj, name, missing)
        )
        setattr(obj, name, value)
        self._undo.append(
            (lambda: delattr(obj, name)) if old is missing else (lambda: setattr(obj, name, old))
        )

    def item(self, mapping: MutableMapping[str, Any], key: str, value: Any) -> None:
        old = mapping[key]
        mapping[key] = value
        self._undo.append(lambda: mapping.__setitem__(key, old))

    def undo(self) -> None:
        while self._undo:
            self._undo.pop()()
