"""One wheel as the index shows it (:class:`Row`), and where a page links a file.

Kept apart from :mod:`cuship.index.render`, which re-exports them: what the pages and
manifests say of a wheel, not how they are rendered.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import field
from typing import Any
from urllib.parse import quote, urlsplit

from cuship._record import frozen
from cuship.index._pages import FileLink
from cuship.index.attached import ATTESTATION_SUFFIX

__all__ = ["PROJECT_DEPTH", "Row", "base_of", "file_href"]

PROJECT_DEPTH = 2  # simple/PROJECT/ below SITE: where a project's manifest links from


# What quote(..., safe="") leaves as it is: a filename made only of these needs no quoting
_UNQUOTED = re.compile(r"[A-Za-z0-9_.~-]*")


@functools.lru_cache(maxsize=65536)
def _quoted(filename: str) -> str:
    if _UNQUOTED.fullmatch(filename):
        return filename
    return quote(filename, safe="")


def file_href(filename: str, *, base_url: str | None, depth: int) -> str:
    """Where a page ``depth`` directories below SITE links ``filename`` ('+' becomes %2B)."""
    name = _quoted(filename)
    if base_url is not None:
        return f"{base_url.rstrip('/')}/{name}"
    return "../" * depth + "files/" + name


def base_of(url: str) -> str | None:
    """The base URL of an absolute file URL; None for a link into the site's ``files/``."""
    if urlsplit(url).scheme in ("http", "https"):
        return url.rsplit("/", 1)[0]
    return None


@frozen
class Row:
    """One wheel as the index shows it. ``base``: where the file lives (None: ``files/``)."""

    filename: str
    project: str
    version: str
    local: str | None
    tags: tuple[str, ...]
    sha256: str
    size: int
    requires_python: str | None
    metadata_sha256: str
    base: str | None
    yanked: str | None  # None: not yanked; "": yanked without a reason
    describe: Mapping[str, object] = field(default_factory=dict)
    attestation_sha256: str | None = None

    def href(self, depth: int) -> str:
        return file_href(self.filename, base_url=self.base, depth=depth)

    def attestation_href(self, depth: int) -> str | None:
        if self.attestation_sha256 is None:
            return None
        return file_href(self.filename + ATTESTATION_SUFFIX, base_url=self.base, depth=depth)

    def link(self, depth: int) -> FileLink:
        # Positional: a page of every wheel makes one each, and keywords cost a third more
        return FileLink(
            self.filename,
            file_href(self.filename, base_url=self.base, depth=depth),
            self.sha256,
            self.size,
            self.requires_python,
            self.metadata_sha256,
            self.yanked,
            None if self.attestation_sha256 is None else self.attestation_href(depth),
        )

    def record(self) -> dict[str, object]:
        """The manifest record; URLs relative to ``simple/PROJECT/cuship.json``."""
        attestation = None
        href = self.attestation_href(PROJECT_DEPTH)
        if href is not None:
            attestation = {"url": href, "sha256": self.attestation_sha256}
        return {
            "filename": self.filename,
            "project": self.project,
            "version": self.version,
            "local": self.local,
            "tags": list(self.tags),
            "sha256": self.sha256,
            "size": self.size,
            "requires_python": self.requires_python,
            "metadata_sha256": self.metadata_sha256,
            "url": self.href(PROJECT_DEPTH),
            "yanked": self.yanked,
            "describe": dict(self.describe),
            "attestation": attestation,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Row:
        """A row back from its manifest record (KeyError/TypeError/ValueError when broken)."""
        attestation = record.get("attestation")
        describe = record.get("describe")
        yanked = record.get("yanked")
        python = record.get("requires_python")
        return cls(
            filename=str(record["filename"]),
            project=str(record["project"]),
            version=str(record["version"]),
            local=None if record.get("local") is None else str(record["local"]),
            tags=tuple(str(t) for t in record["tags"]),
            sha256=str(record["sha256"]),
            size=int(record["size"]),
            requires_python=None if python is None else str(python),
            metadata_sha256=str(record["metadata_sha256"]),
            base=base_of(str(record["url"])),
            yanked=None if yanked is None else str(yanked),
            describe=dict(describe) if isinstance(describe, Mapping) else {},
            attestation_sha256=(
                str(attestation["sha256"]) if isinstance(attestation, Mapping) else None
            ),
        )
