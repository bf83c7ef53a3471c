"""What an update takes away stays published until the next update: a reader holding a page
(pip between its page and its files) never finds a file the page lists gone.

An update in place records what it no longer lists (wheels and their files, project pages,
sub-indexes) in ``cuship-retired.json`` at the root of the site, and leaves them where they
are; the next update that changes the site deletes them (unless it lists them again) and
records its own. Before its first change an update writes the record *in progress*: what it
will delete (``previous``) and what it retires (``retired``). A run killed after that is
completed by the rerun, which finds the record in progress and carries its ``retired`` on, so
it ends with the bytes of a run never killed; a run that changes nothing writes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["RETIRED", "Retired"]

RETIRED = "cuship-retired.json"


@dataclass(frozen=True, slots=True, kw_only=True)
class Retired:
    """The record: ``retired`` (kept until the next update), and while an update runs,
    ``previous`` (what that update deletes at its end)."""

    retired: frozenset[str] = frozenset()
    previous: frozenset[str] | None = None

    @classmethod
    def read(cls, site: Path) -> Retired:
        """The record of ``site`` (empty when there is none or it cannot be read)."""
        try:
            document = json.loads((site / RETIRED).read_bytes())
            retired = frozenset(_paths(document["retired"]))
            previous = document.get("previous")
            return cls(
                retired=retired,
                previous=None if previous is None else frozenset(_paths(previous)),
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return cls()

    @property
    def in_progress(self) -> bool:
        return self.previous is not None

    @property
    def due(self) -> frozenset[str]:
        """What the next update deletes."""
        return self.retired if self.previous is None else self.previous

    @property
    def carried(self) -> frozenset[str]:
        """What an interrupted update retired, which its rerun retires again."""
        return frozenset() if self.previous is None else self.retired

    @property
    def recorded(self) -> frozenset[str]:
        return self.retired | (self.previous or frozenset())

    def started(self, removed: Iterable[str], live: Collection[str]) -> Retired:
        """The record in progress of an update that removes ``removed`` and lists ``live``."""
        return Retired(
            retired=frozenset(p for p in (*self.carried, *removed) if p not in live),
            previous=frozenset(p for p in self.due if p not in live),
        )

    def encoded(self) -> bytes:
        document: dict[str, list[str]] = {"retired": sorted(self.retired)}
        if self.previous is not None:
            document["previous"] = sorted(self.previous)
        return (json.dumps(document, separators=(",", ":")) + "\n").encode()


def _paths(value: object) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise TypeError("a list of paths")
    # Only paths inside the site: nothing absolute, no part that climbs out or is hidden
    return [p for p in value if p and not p.startswith("/") and ".." not in p.split("/")]
