"""Read wheels for the index: filename, sha256, size and core METADATA, through a cache.

Analyse first, write later: :func:`scan` only reads. It returns one frozen :class:`IndexedWheel`
per usable wheel and reports every file it skips (not a wheel, a broken name, a broken zip or
corrupt compressed data, no METADATA or one larger than :data:`METADATA_LIMIT`, a ``.dist-info``
directory or METADATA that disagrees with the filename) as a warning event naming the file.
Wheels are untrusted input: no METADATA is inflated past the limit, whatever the archive says.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
import zlib
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

from cuship._fs import sha256_file
from cuship.errors import InputError
from cuship.events import Emit, Event, discard
from cuship.index._cache import CacheEntry, FileStamp, ScanCache
from cuship.index._zipmeta import METADATA_LIMIT, Member, metadata_fast

__all__ = ["IndexedWheel", "Skipped", "expand_paths", "scan", "scan_report"]

# Wheels up to this size are read once into memory (hash and zip from the same bytes).
_READ_WHOLE = 64 * 1024 * 1024
_ATTACHED = ".whl.intoto.jsonl"


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
    """A file that was given but not indexed, and why.

    ``bad_wheel``: the file is named like a wheel (``*.whl``) but could not be indexed, which
    `cuship index` counts as a failure; other files (a README beside the wheels) are only noted.
    """

    path: Path
    reason: str

    @property
    def bad_wheel(self) -> bool:
        return self.path.name.endswith(".whl")


class _Unreadable(Exception):
    """Internal: the archive is broken or holds no single METADATA."""


class _Skip(Exception):
    """Internal: this file cannot be indexed; the message says why."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(reason)
        self.path = path


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
    """Like :func:`scan`, also returning the files skipped and why.

    Each file is read once, in order; reading and hashing it is the floor of this work (a
    thread pool was measured slower here, on two busy cores, and is not used).
    """
    # A wheel's attestation beside it is published with the wheel, not skipped with a warning.
    files = [p for p in expand_paths(paths) if not p.name.endswith(_ATTACHED)]
    jobs = [_plan(path, cache) for path in files]
    todo = [job for job in jobs if isinstance(job, _Job) and job.entry is None]
    fresh = {job.key: _read_or_skip(job) for job in todo}
    wheels: dict[str, IndexedWheel] = {}
    skipped: list[Skipped] = []
    for job in jobs:
        try:
            if isinstance(job, _Skip):
                raise job
            wheel = _finish(job, job.entry or fresh[job.key], cache)
        except _Skip as why:
            skipped.append(_skipped(why, emit))
            continue
        _add_unique(wheels, wheel, emit)
    return tuple(wheels.values()), tuple(skipped)


def _skipped(why: _Skip, emit: Emit) -> Skipped:
    message = f"skipped {str(why.path)!r}: {why}"
    data = {"path": str(why.path), "reason": str(why)}
    emit(Event(level="warning", topic="index", message=message, data=data))
    return Skipped(path=why.path, reason=str(why))


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


@dataclass(frozen=True, slots=True, kw_only=True)
class _Job:
    path: Path
    key: str
    name: NormalizedName
    version: Version
    tags: tuple[str, ...]
    stamp: FileStamp
    entry: CacheEntry | None


def _plan(path: Path, cache: ScanCache | None) -> _Job | _Skip:
    """What is known about ``path`` before reading it (the cached entry, if still valid)."""
    if not path.name.endswith(".whl"):
        return _Skip(path, "not a wheel (name does not end in .whl)")
    try:
        name, version, _build, tags = parse_wheel_filename(path.name)
    except (InvalidWheelFilename, InvalidVersion) as err:
        return _Skip(path, f"invalid wheel filename: {err}")
    key = str(path.absolute())
    try:
        stamp = FileStamp.of(path.stat())
    except OSError as err:
        return _Skip(path, f"cannot read it: {err.strerror or err}")
    entry = cache.get(key, stamp) if cache is not None else None
    return _Job(
        path=path,
        key=key,
        name=name,
        version=version,
        tags=tuple(sorted(str(t) for t in tags)),
        stamp=stamp,
        entry=entry,
    )


def _read_or_skip(job: _Job) -> CacheEntry | _Skip:
    try:
        entry, member = _read(job.path, job.stamp.size)
        _check_dist_info(job.path, member, job.name)
    except _Skip as why:
        return why
    return entry


def _finish(job: _Job, read: CacheEntry | _Skip, cache: ScanCache | None) -> IndexedWheel:
    if isinstance(read, _Skip):
        raise read
    requires_python = _check_metadata(job.path, read.metadata, job.name, job.version)
    if cache is not None and job.entry is None:
        cache.put(job.key, job.stamp, read)
    return IndexedWheel(
        filename=job.path.name,
        project=job.name,
        version=str(job.version),
        local=job.version.local,
        tags=job.tags,
        sha256=read.sha256,
        size=job.stamp.size,
        requires_python=requires_python,
        metadata=read.metadata,
        metadata_sha256=hashlib.sha256(read.metadata).hexdigest(),
        path=job.path,
    )


def _read(path: Path, size: int) -> tuple[CacheEntry, str]:
    """Hash the file and pull its METADATA (and that member's name), reading small files once."""
    try:
        return _read_unchecked(path, size)
    except _Unreadable as why:
        raise _Skip(path, str(why)) from why
    except OSError as err:
        raise _Skip(path, f"cannot read it: {err.strerror or err}") from err


def _read_unchecked(path: Path, size: int) -> tuple[CacheEntry, str]:
    if size <= _READ_WHOLE:
        data = path.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        member = metadata_fast(data) or _metadata_from(io.BytesIO(data))
    else:
        digest = sha256_file(path)
        with path.open("rb") as handle:
            member = _metadata_from(handle)
    return CacheEntry(sha256=digest, metadata=member.data), member.name


_LIMIT_TEXT = f"{METADATA_LIMIT // (1024 * 1024)} MiB"


def _metadata_from(source: io.BufferedIOBase | io.BytesIO) -> Member:
    """The METADATA member through :mod:`zipfile`, inflating at most ``METADATA_LIMIT + 1``."""
    try:
        with zipfile.ZipFile(source) as archive:
            infos = [
                i
                for i in archive.infolist()
                if i.filename.count("/") == 1 and i.filename.endswith(".dist-info/METADATA")
            ]
            if len(infos) != 1:
                found = "no" if not infos else f"{len(infos)}"
                raise _Unreadable(f"{found} .dist-info/METADATA in the wheel")
            (info,) = infos
            if info.file_size > METADATA_LIMIT:
                raise _Unreadable(
                    f"{info.filename} is {info.file_size} bytes, over the {_LIMIT_TEXT} limit"
                )
            with archive.open(info) as member:
                data = member.read(METADATA_LIMIT + 1)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError) as err:
        raise _Unreadable(f"broken zip: {err}") from err
    except zlib.error as err:
        raise _Unreadable(f"corrupt compressed data in METADATA: {err}") from err
    except (NotImplementedError, RuntimeError) as err:  # unknown method, encrypted member
        raise _Unreadable(f"unreadable METADATA: {err}") from err
    if len(data) > METADATA_LIMIT:
        raise _Unreadable(f"{info.filename} inflates past the {_LIMIT_TEXT} limit")
    return Member(info.filename, data)


def _check_dist_info(path: Path, member: str, name: NormalizedName) -> None:
    """pip installs a wheel only when its ``.dist-info`` directory names the project."""
    folder = member.partition("/")[0]
    stem = folder.removesuffix(".dist-info")
    candidates = {stem.partition("-")[0], stem.rpartition("-")[0] or stem}
    if name not in {canonicalize_name(c) for c in candidates}:
        raise _Skip(
            path,
            f"its metadata directory {folder!r} does not name the project {name!r} "
            "(pip would reject it)",
        )


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


def _check_metadata(
    path: Path, metadata: bytes, name: NormalizedName, version: Version
) -> str | None:
    """Requires-Python from METADATA, after checking Name and Version agree with the filename."""
    fields = dict(_headers(metadata))
    meta_name, meta_version = fields.get("name", ""), fields.get("version", "")
    try:
        same_version = Version(meta_version) == version
    except InvalidVersion:
        same_version = False
    if canonicalize_name(meta_name) != name or not same_version:
        raise _Skip(
            path,
            f"METADATA says Name {meta_name!r} Version {meta_version!r} but the filename says "
            f"{name!r} {str(version)!r} (pip would reject it)",
        )
    return fields.get("requires-python") or None
