"""What an update takes away stays published until the next update: a reader holding a page
(pip between its page and its files) never finds a file the page lists gone.

An update in place records what it no longer lists (wheels and their files, project pages,
sub-indexes) in ``cuship-retired.json`` at the root of the site, and leaves them where they
are; the next update that changes the site deletes them (unless it lists them again) and
records its own. Before its first change an update writes the record *in progress*: what it
will delete (``previous``) and what it retires (``retired``). A run killed after that is
completed by the rerun, which finds the record in progress and carries its ``retired`` on, so
it ends with the bytes of a run never killed; a run that changes nothing writes nothing.

A rebuild (the whole tree rendered anew and swapped in) gives the same grace:
:func:`carry_over` links into the new tree what the old one published and the new one no
longer has, and records it as retired, so the next run deletes it.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Collection, Iterable
from pathlib import Path

from cuship import _read
from cuship._record import frozen

__all__ = ["RETIRED", "Retired", "carry_over"]

RETIRED = "cuship-retired.json"


@frozen
class Retired:
    """The record: ``retired`` (kept until the next update), and while an update runs,
    ``previous`` (what that update deletes at its end)."""

    retired: frozenset[str] = frozenset()
    previous: frozenset[str] | None = None

    @classmethod
    def read(cls, site: Path) -> Retired:
        """The record of ``site`` (empty when there is none or it cannot be read)."""
        try:
            document = json.loads(_read.read_bytes(site / RETIRED, _read.INDEX_FILE))
            retired = frozenset(_paths(document["retired"]))
            previous = document.get("previous")
            return cls(
                retired=retired,
                previous=None if previous is None else frozenset(_paths(previous)),
            )
        except (OSError, _read.Refused, ValueError, KeyError, TypeError, AttributeError):
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
    return [
        p
        for p in value
        if p and not p.startswith("/") and not any(part.startswith(".") for part in p.split("/"))
    ]


def _files(root: Path) -> Iterable[str]:
    """The files and symbolic links under ``root``, as paths relative to it."""
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]  # the site's own state: not published
        rel = os.path.relpath(top, root)
        for name in (*files, *(d for d in dirs if (Path(top) / d).is_symlink())):
            yield name if rel == "." else f"{rel}/{name}"


def _within(rel: str, paths: frozenset[str]) -> bool:
    """``rel`` is one of ``paths`` or inside one of them (a look-up per part of ``rel``)."""
    parts = rel.split("/")
    return any("/".join(parts[:depth]) in paths for depth in range(1, len(parts) + 1))


def _gone_root(rel: str, new: Path) -> str:
    """The topmost part of ``rel`` that the new tree lacks: a whole page's or sub-index's
    folder is retired as one path, as an update retires it."""
    parts = rel.split("/")
    for depth in range(1, len(parts)):
        head = "/".join(parts[:depth])
        if not os.path.lexists(new / head):
            return head
    return rel


def _link(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_symlink():
        target.symlink_to(source.readlink())
        return
    try:
        os.link(source, target)
    except OSError:  # another filesystem, or links not allowed: a copy keeps the bytes
        shutil.copy2(source, target)


def carry_over(old: Path, new: Path) -> frozenset[str]:
    """Link into ``new`` every file of the published tree ``old`` that ``new`` lacks (but what
    ``old``'s record had already retired: its grace is over), write the record of them in
    ``new``, and return the retired paths."""
    due = Retired.read(old).due
    missing = [
        rel
        for rel in _files(old)
        if rel != RETIRED and not _within(rel, due) and not os.path.lexists(new / rel)
    ]
    retired = {_gone_root(rel, new) for rel in missing}  # before any link makes folders
    for rel in missing:
        _link(old / rel, new / rel)
    if retired:
        (new / RETIRED).write_bytes(Retired(retired=frozenset(retired)).encoded())
    return frozenset(retired)
