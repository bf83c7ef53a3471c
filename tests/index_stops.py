"""Stopping an index update at its n-th change to the site, as a kill would (unit tests)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from cuship.index import update as update_module


class Stop(Exception):
    """Raised in place of the change an update was stopped at."""


@pytest.fixture
def stop_after(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[int | None], None]]:
    """``stop_after(n)``: the n-th write, link, swap or removal of an update raises
    :class:`Stop`; ``stop_after(None)`` lets every change through."""
    budget: dict[str, int | None] = {"left": None}

    def counted(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if budget["left"] is not None:
                if budget["left"] == 0:
                    raise Stop
                budget["left"] -= 1
            return original(*args, **kwargs)

        return wrapper

    for name in ("put", "place", "swap", "remove", "prune"):
        monkeypatch.setattr(update_module._Site, name, counted(getattr(update_module._Site, name)))

    def arm(n: int | None) -> None:
        budget["left"] = n

    yield arm
