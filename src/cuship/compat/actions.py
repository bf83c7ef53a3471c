"""GitHub Actions pinned by commit (``data/actions.toml``): what generated workflows ``uses:``."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from cuship import schema
from cuship._record import frozen
from cuship.schema import field_doc

__all__ = ["ActionPin", "ActionsFile", "load_actions", "uses"]

DATA_FILE = Path(__file__).parent.parent / "data" / "actions.toml"
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_NAME = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


def _commit(value: str) -> None:
    if not _COMMIT.match(value):
        raise ValueError(f"{value!r} is not a full 40-digit commit")


def _name(value: str) -> None:
    if not _NAME.match(value):
        raise ValueError(f"{value!r} is not OWNER/REPOSITORY")


@frozen
class ActionPin:
    """One action and the commit its release tag names."""

    name: str = field_doc("OWNER/REPOSITORY of the action.", validate=_name)
    tag: str = field_doc("The release tag the commit is (a comment for people).")
    commit: str = field_doc("The full commit the workflow uses.", validate=_commit)
    source: str = field_doc("Where the tag and commit were read.")

    @property
    def uses(self) -> str:
        return f"{self.name}@{self.commit}"


@frozen
class ActionsFile:
    """actions.toml: the GitHub Actions generated workflows use, pinned by commit."""

    action: tuple[ActionPin, ...] = field_doc("One table per action.", non_empty=True)


@functools.cache
def load_actions(path: Path = DATA_FILE) -> dict[str, ActionPin]:
    """The pinned actions by name (the shipped file by default)."""
    loaded = schema.load(ActionsFile, schema.read_toml(path), source=str(path), strict=True)
    return {pin.name: pin for pin in loaded.action}


def uses(name: str) -> str:
    """``OWNER/REPO@COMMIT`` of the action ``name`` (KeyError: not in the data file)."""
    return load_actions()[name].uses
