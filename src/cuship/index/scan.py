"""Read wheels for the index: filename, sha256, size and core METADATA, through a cache.

Analyse first, write later: :func:`scan` only reads. It returns one frozen :class:`IndexedWheel`
per usable wheel and reports every file it skips (not a wheel, a broken name, a broken zip, no
METADATA, METADATA that disagrees with the filename) as a warning event naming the file.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import (
    InvalidWheelFilename,
    NormalizedName,
    canonicalize_name,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from cuship.errors import InputError
from cuship.events import Emit, Event, discard
from cuship.index._cache import CacheEntry, ScanCache

__all__ = ["IndexedWheel", "Skipped", "expand_paths", "scan", "scan_report"]

# Wheels up to this size are read once into memory (hash and zip from the same bytes).
_READ_WHOLE = 64 * 1024 * 1024
_CHUNK = 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexedWheel:
    """One wheel as the index sees it."""

    filename: str
    project: NormalizedName
    version: str
    local: str | None
    tags: tuple[str, ...]
    sha256: str
    size: int
    requires_python: str | None
    metadata: bytes
    metadata_sha256: str
    path: Path


@dataclass(frozen=True, slots=True, kw_only=True)
class Skipped:
    """A file that was given but not indexed, and why."""

    path: Path
    reason: str


class _Skip(Exception):
    """Internal: this file cannot be indexed; the message says why."""


def expand_paths(paths: Iterable[Path]) -> tuple[Path, ...]:
    """Files as given; a directory stands for the files directly inside it (sorted, no dotfiles)."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out.extend(
                sorted(p for p in path.iterdir() if not p.name.startswith(".") and p.is_file())
            )
        elif path.exists():
            out.append(path)
        else:
            raise InputError(
                f"no such file or directory: {str(path)!r}",
                hint="pass wheel files or directories that hold them",
            )
    return tuple(out)


def scan(
    paths: Iterable[Path], *, cache: ScanCache | None = None, emit: Emit = discard
) -> tuple[IndexedWheel, ...]:
    """Index-ready facts for every usable wheel among ``paths`` (files or directories)."""
    return scan_report(paths, cache=cache, emit=emit)[0]


def scan_report(
    paths: Iterable[Path], *, cache: ScanCache | None = None, emit: Emit = discard
) -> tuple[tuple[IndexedWheel, ...], tuple[Skipped, ...]]:
    """Like :func:`scan`, also returning the files skipped and why."""
    wheels: dict[str, IndexedWheel] = {}
    skipped: list[Skipped] = []
    for path in expand_paths(paths):
        try:
            wheel = _scan_one(path, cache)
        except _Skip as why:
            skipped.append(Skipped(path=path, reason=str(why)))
            emit(
                Event(
                    level="warning",
                    topic="index",
                    message=f"skipped {str(path)!r}: {why}",
                    data={"path": str(path), "reason": str(why)},
                )
            )
            continue
        _add_unique(wheels, wheel, emit)
    return tuple(wheels.values()), tuple(skipped)


def _add_unique(wheels: dict[str, IndexedWheel], wheel: IndexedWheel, emit: Emit) -> None:
    seen = wheels.get(wheel.filename)
    if seen is None:
        wheels[wheel.filename] = wheel
    elif seen.sha256 == wheel.sha256:
        emit(Event(level="debug", topic="index", message=f"same wheel twice: {str(wheel.path)!r}"))
    else:
        raise InputError(
            f"two different files are both named {wheel.filename!r}: "
            f"{str(seen.path)!r} and {str(wheel.path)!r}",
            hint="an index can hold one file per name; rename or drop one of them",
        )


def _scan_one(path: Path, cache: ScanCache | None) -> IndexedWheel:
    if not path.name.endswith(".whl"):
        raise _Skip("not a wheel (name does not end in .whl)")
    try:
        name, version, _build, tags = parse_wheel_filename(path.name)
    except (InvalidWheelFilename, InvalidVersion) as err:
        raise _Skip(f"invalid wheel filename: {err}") from err
    key = str(path.absolute())
    stat = path.stat()
    entry = cache.get(key, stat.st_size, stat.st_mtime_ns) if cache is not None else None
    if entry is None:
        entry = _read(path, stat.st_size)
        if cache is not None:
            cache.put(key, stat.st_size, stat.st_mtime_ns, entry)
    requires_python = _check_metadata(entry.metadata, name, version)
    return IndexedWheel(
        filename=path.name,
        project=name,
        version=str(version),
        local=version.local,
        tags=tuple(sorted(str(t) for t in tags)),
        sha256=entry.sha256,
        size=stat.st_size,
        requires_python=requires_python,
        metadata=entry.metadata,
        metadata_sha256=hashlib.sha256(entry.metadata).hexdigest(),
        path=path,
    )


def _read(path: Path, size: int) -> CacheEntry:
    """Hash the file and pull its METADATA, reading small files only once."""
    try:
        if size <= _READ_WHOLE:
            data = path.read_bytes()
            digest = hashlib.sha256(data).hexdigest()
            metadata = _metadata_from(io.BytesIO(data))
        else:
            digest = _hash_file(path)
            with path.open("rb") as handle:
                metadata = _metadata_from(handle)
    except OSError as err:
        raise _Skip(f"cannot read it: {err}") from err
    return CacheEntry(sha256=digest, metadata=metadata)


def _hash_file(path: Path) -> str:
    sha = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(_CHUNK), b""):
            sha.update(block)
    return sha.hexdigest()


def _metadata_from(source: io.BufferedIOBase | io.BytesIO) -> bytes:
    try:
        with zipfile.ZipFile(source) as archive:
            names = [
                n
                for n in archive.namelist()
                if n.count("/") == 1 and n.endswith(".dist-info/METADATA")
            ]
            if len(names) != 1:
                found = "no" if not names else f"{len(names)}"
                raise _Skip(f"{found} .dist-info/METADATA in the wheel")
            return archive.read(names[0])
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError) as err:
        raise _Skip(f"broken zip: {err}") from err


def _headers(metadata: bytes) -> Iterator[tuple[str, str]]:
    """(field, value) pairs of the METADATA header block; folded lines joined."""
    text = metadata.decode("utf-8", errors="replace")
    field: str | None = None
    value = ""
    for line in text.splitlines():
        if not line.strip():
            break
        if line[0] in " \t" and field is not None:
            value += " " + line.strip()
            continue
        if field is not None:
            yield field, value
        field, _, value = line.partition(":")
        field, value = field.strip().lower(), value.strip()
    if field is not None:
        yield field, value


def _check_metadata(metadata: bytes, name: NormalizedName, version: Version) -> str | None:
    """Requires-Python from METADATA, after checking Name and Version agree with the filename."""
    fields = dict(_headers(metadata))
    meta_name, meta_version = fields.get("name", ""), fields.get("version", "")
    try:
        same_version = Version(meta_version) == version
    except InvalidVersion:
        same_version = False
    if canonicalize_name(meta_name) != name or not same_version:
        raise _Skip(
            f"METADATA says Name {meta_name!r} Version {meta_version!r} but the filename says "
            f"{name!r} {str(version)!r} (pip would reject it)"
        )
    return fields.get("requires-python") or None
