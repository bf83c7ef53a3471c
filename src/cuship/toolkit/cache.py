"""The toolkit cache: where assembled toolkits live (one directory per CUDA release) and the
record each one carries of the wheels it was made from."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.version import Version

from cuship import _read, settings
from cuship.toolkit.catalog import Catalog, ToolkitRelease, Unavailable, WheelComponent
from cuship.toolkit.layout import MANIFEST

__all__ = [
    "DEFAULT_INDEX",
    "Installed",
    "Listed",
    "Listing",
    "WheelFile",
    "cached",
    "index_url",
    "listing",
    "read_installed",
    "toolkit_prefix",
    "toolkits_root",
]

DEFAULT_INDEX = "https://pypi.org/simple"


def toolkits_root(environ: Mapping[str, str]) -> Path:
    """``$CUSHIP_TOOLKITS``, else ``$XDG_CACHE_HOME/cuship/toolkits`` (``~/.cache`` by default)."""
    explicit = environ.get(settings.TOOLKITS)
    if explicit:
        return Path(explicit).expanduser()
    cache = environ.get("XDG_CACHE_HOME") or str(Path(environ.get("HOME", "~")) / ".cache")
    return Path(cache).expanduser() / "cuship" / "toolkits"


def index_url(environ: Mapping[str, str]) -> str:
    """The simple index the wheels come from: ``$CUSHIP_TOOLKIT_INDEX`` or PyPI."""
    return environ.get(settings.TOOLKIT_INDEX) or DEFAULT_INDEX


def toolkit_prefix(root: Path | str, release: ToolkitRelease) -> Path:
    """Where the toolkit of ``release`` lives (or will) under ``root``."""
    return Path(root) / str(release.cuda)


@dataclass(frozen=True, slots=True, kw_only=True)
class WheelFile:
    """One wheel a toolkit was assembled from, as the index listed it."""

    filename: str
    url: str
    sha256: str
    size: int

    def to_json(self) -> dict[str, object]:
        return {
            "filename": self.filename,
            "url": self.url,
            "sha256": self.sha256,
            "size": self.size,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Installed:
    """An assembled toolkit: its prefix, what it is, and where its files came from."""

    prefix: Path
    cuda: str
    nvcc_version: str
    index: str
    wheels: tuple[WheelFile, ...]
    assembled: str  # ISO 8601, UTC

    @property
    def nvcc(self) -> Path:
        return self.prefix / "bin" / "nvcc"

    def to_json(self) -> dict[str, object]:
        return {
            "prefix": str(self.prefix),
            "cuda": self.cuda,
            "nvcc_version": self.nvcc_version,
            "nvcc": str(self.nvcc),
            "index": self.index,
            "wheels": [w.to_json() for w in self.wheels],
            "assembled": self.assembled,
        }

    def record(self) -> bytes:
        """The manifest written into the prefix (without the prefix: the tree can move)."""
        doc = self.to_json()
        del doc["prefix"], doc["nvcc"]
        return (json.dumps(doc, indent=2) + "\n").encode()


def _wheel(entry: Any) -> WheelFile:
    return WheelFile(
        filename=str(entry["filename"]),
        url=str(entry["url"]),
        sha256=str(entry["sha256"]),
        size=int(entry["size"]),
    )


def read_installed(prefix: Path, components: Sequence[WheelComponent] = ()) -> Installed | None:
    """The toolkit at ``prefix`` when it is complete: its manifest reads and every file the
    ``components`` provide is there. None for anything else (absent, half-made, damaged)."""
    try:
        doc = _read.read_json(prefix / MANIFEST, _read.CACHE)
        installed = Installed(
            prefix=prefix,
            cuda=str(doc["cuda"]),
            nvcc_version=str(doc["nvcc_version"]),
            index=str(doc["index"]),
            wheels=tuple(_wheel(w) for w in doc["wheels"]),
            assembled=str(doc["assembled"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    provided = (path for c in components for path in c.provides)
    if installed.cuda != prefix.name or not all((prefix / p).exists() for p in provided):
        return None
    return installed


def cached(root: Path, components: Sequence[WheelComponent] = ()) -> tuple[Installed, ...]:
    """Every complete toolkit under ``root``, by CUDA release."""
    if not root.is_dir():
        return ()
    found = [read_installed(p, components) for p in root.iterdir() if p.is_dir()]
    return tuple(sorted((i for i in found if i is not None), key=lambda i: Version(i.cuda)))


@dataclass(frozen=True, slots=True, kw_only=True)
class Listed:
    """A release cuship can assemble, and its toolkit in the cache when there is one."""

    release: ToolkitRelease
    cached: Installed | None

    def to_json(self) -> dict[str, object]:
        prefix = None if self.cached is None else str(self.cached.prefix)
        return {**self.release.to_json(), "cached": prefix}


@dataclass(frozen=True, slots=True, kw_only=True)
class Listing:
    """``cuship toolkit list``: the cache, every release PyPI supplies (cached or not), and
    the CUDA majors it cannot."""

    cache: Path
    toolkits: tuple[Listed, ...]
    unavailable: tuple[Unavailable, ...]

    def to_json(self) -> dict[str, object]:
        """``cuship toolkit list --json``."""
        return {
            "cache": str(self.cache),
            "toolkits": [t.to_json() for t in self.toolkits],
            "unavailable": [u.to_json() for u in self.unavailable],
        }


def listing(rows: Catalog, root: Path) -> Listing:
    """The releases of ``rows`` with the toolkits cached under ``root``."""
    have = {i.cuda: i for i in cached(root, rows.components)}
    toolkits = tuple(Listed(release=r, cached=have.get(str(r.cuda))) for r in rows.releases)
    return Listing(cache=root, toolkits=toolkits, unavailable=rows.unavailable)
