"""Read wheels for the index: filename, sha256, size and core METADATA, through a cache.

Analyse first, write later: :func:`scan` only reads. It returns one frozen :class:`IndexedWheel`
per usable wheel and reports every file it skips (not a wheel, a broken name, a broken zip or
corrupt compressed data, no METADATA or one larger than :data:`METADATA_LIMIT`, a ``.dist-info``
directory or METADATA that disagrees with the filename) as a warning event naming the file.
Wheels are untrusted input: no METADATA is inflated past the limit, whatever the archive says.
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Union, cast

from cuship._read import NotRegular, file_kind, regular_problem
from cuship._record import frozen
from cuship.errors import InputError
from cuship.events import Emit, Event, discard
from cuship.index._cache import CacheEntry, FileStamp, ScanCache
from cuship.index._pool import Counted, map_spread, uncounted
from cuship.index.describe import describe_pure
from cuship.wheel.read.archive import (
    Disagrees,
    Unreadable,
    WheelRead,
    check_dist_info,
    check_metadata,
    read_wheel,
)
from cuship.wheel.read.filename import BadFilename, FilenameSays, canonical_name, parse_filename
from cuship.wheel.read.zipmeta import (
    Member,
)
from cuship.wheel.record import (
    RecordMismatch,
)
from cuship.wheel.variant import split_variant

if TYPE_CHECKING:
    from packaging.utils import NormalizedName

__all__ = [
    "CachedFile",
    "IndexedWheel",
    "NewFile",
    "Planned",
    "Skipped",
    "cache_key",
    "expand_paths",
    "filename_project",
    "look_up",
    "plan_files",
    "scan",
    "scan_files",
    "scan_planned",
    "scan_report",
    "stat_files",
    "wheel_files",
]

# Pure wheels up to this size are described by the scan (describe_wheel reads larger ones whole
# through zipfile: the same record, the same bound as its own fast path)
_DESCRIBE_PURE = 16 * 1024 * 1024
_ATTACHED = ".whl.intoto.jsonl"


@frozen
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
    # describe_wheel's record, made from what the scan read (scan_report(describe=True)):
    # saves reading the wheel again to describe it; None when not made
    described: Mapping[str, object] | None = field(default=None, compare=False, repr=False)


@frozen
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


class _Skip(Exception):
    """Internal: this file cannot be indexed; the message says why."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(reason)
        self.path = path


def expand_paths(paths: Iterable[Path]) -> tuple[Path, ...]:
    """Files as given; a directory stands for the files directly inside it (sorted, no dotfiles)."""
    return tuple(Path(p) for p in _listed(paths))


def _listed(
    paths: Iterable[Path],
    attached: dict[str, frozenset[str]] | None = None,
    stats: dict[str, os.stat_result] | None = None,
) -> list[str]:
    """:func:`expand_paths` as strings; ``attached`` gets the names of the wheels'
    attestations in each directory listed, by the directory's path as a Path words it;
    ``stats`` gets the stat of each file given by name (taken here to tell it from a
    directory, so the scan need not take it again)."""
    out: list[str] = []
    for path in paths:
        where = str(path)
        try:
            found: os.stat_result | None = os.stat(where)  # noqa: PTH116 - per file given
        except OSError:
            found = None  # a missing file, worded below as before
        if found is not None and stat.S_ISDIR(found.st_mode) and not where.endswith(".whl"):
            out.extend(_list_folder(path, attached))  # a folder named *.whl is skipped
        elif found is not None or path.exists() or path.is_symlink():
            out.append(where)  # a dangling link is skipped, saying so
            if found is not None and stats is not None:
                stats[where] = found
        else:
            raise InputError(
                f"no such file or directory: {where!r}",
                hint="pass wheel files or directories that hold them",
            )
    return out


def _list_folder(path: Path, attached: dict[str, frozenset[str]] | None) -> list[str]:
    """The files directly in the folder ``path`` (sorted, no dotfiles); ``attached`` gets the
    attestations among them."""
    with os.scandir(path) as entries:  # is_file() from the entry: no stat per file
        names = sorted(e.name for e in entries if not e.name.startswith(".") and e.is_file())
    if attached is not None:
        attached[str(Path(path))] = frozenset(name for name in names if name.endswith(_ATTACHED))
    folder = str(path).rstrip("/") + "/"
    return [folder + name for name in names]


def scan(
    paths: Iterable[Path], *, cache: ScanCache | None = None, emit: Emit = discard
) -> tuple[IndexedWheel, ...]:
    """Index-ready facts for every usable wheel among ``paths`` (files or directories)."""
    return scan_report(paths, cache=cache, emit=emit)[0]


def scan_report(
    paths: Iterable[Path],
    *,
    cache: ScanCache | None = None,
    emit: Emit = discard,
    describe: bool = False,
) -> tuple[tuple[IndexedWheel, ...], tuple[Skipped, ...]]:
    """Like :func:`scan`, also returning the files skipped and why.

    Each file is read once; a run with many files to read spreads them over the cores in
    forked processes (:mod:`cuship.index._pool`; a thread pool was measured slower here: the
    work is Python holding the GIL). ``describe``: each small wheel read that holds no shared
    object is also described from what was read (:func:`cuship.index.describe.describe_pure`,
    ``IndexedWheel.described``), so describing it needs no second read.
    """
    return scan_files(wheel_files(paths), cache=cache, emit=emit, describe=describe)


def wheel_files(
    paths: Iterable[Path],
    attached: dict[str, frozenset[str]] | None = None,
    stats: dict[str, os.stat_result] | None = None,
) -> list[str]:
    """The files to scan among ``paths`` (:func:`expand_paths`, as strings: an index of
    50,000 wheels need not make 50,000 Paths in one process): a wheel's attestation beside
    it is published with the wheel, not skipped with a warning. ``attached`` gets the
    attestations' names in each directory listed (see :func:`find_attestations`); ``stats``
    the stat of each file given by name (for :func:`plan_files`)."""
    return [p for p in _listed(paths, attached, stats) if not p.endswith(_ATTACHED)]


def scan_files(
    files: Iterable[Path | str],
    *,
    cache: ScanCache | None = None,
    emit: Emit = discard,
    describe: bool = False,
    stats: Mapping[str, os.stat_result] | None = None,
    counted: Counted = uncounted,
) -> tuple[tuple[IndexedWheel, ...], tuple[Skipped, ...]]:
    """:func:`scan_report` of files already listed (:func:`wheel_files`, with its ``stats``)."""
    plans = plan_files(files, cache, stats)
    return scan_planned(plans, cache=cache, emit=emit, describe=describe, counted=counted)


Planned = Union["CachedFile", "NewFile", "_Skip"]
"""What :func:`plan_files` knows of one file before reading it."""


def plan_files(
    files: Iterable[Path | str],
    cache: ScanCache | None,
    stats: Mapping[str, os.stat_result] | None = None,
) -> list[Planned]:
    """Each file stated (``stats``: stats already taken, by the path as given) and looked up
    in the cache, nothing read: a file whose stamp the cache holds is a :class:`CachedFile`.

    A cache that knows no file (a first run) is not asked about each: every file is to be
    read, and its stamp comes from the file opened, not from a stat of its path before."""
    if cache is not None and not cache.knows_nothing():
        return look_up(stat_files(files, stats), cache)
    jobs: list[Planned] = [_unstated(str(path)) for path in files]
    if cache is not None:
        cache.missed(sum(isinstance(job, NewFile) for job in jobs))
    return jobs


def stat_files(
    files: Iterable[Path | str], stats: Mapping[str, os.stat_result] | None = None
) -> list[NewFile | _Skip]:
    """Each file stated, not yet looked up in a cache (:func:`look_up`); ``stats``: stats
    already taken, by the path as given."""
    taken = stats or {}
    return [_stated(str(path), taken) for path in files]


def look_up(plans: Iterable[Planned], cache: ScanCache) -> list[Planned]:
    """``plans`` with each stated file the cache holds at its stamp made a :class:`CachedFile`
    (the cache reads the rows it lacks a batch at a time)."""
    jobs = list(plans)
    cache.prefetch([job.key for job in jobs if isinstance(job, NewFile)])
    return [_looked_up(job, cache) if isinstance(job, NewFile) else job for job in jobs]


def _looked_up(job: NewFile, cache: ScanCache) -> Planned:
    if job.stamp is None or not cache.known(job.key, job.stamp):
        return job
    return CachedFile(job.where, job.key, job.filename, job.stamp)


def scan_planned(
    jobs: Sequence[Planned],
    *,
    cache: ScanCache | None = None,
    emit: Emit = discard,
    describe: bool = False,
    counted: Counted = uncounted,
) -> tuple[tuple[IndexedWheel, ...], tuple[Skipped, ...]]:
    """:func:`scan_report` of files planned (:func:`plan_files`): the new ones read (spread
    over the cores when many), the cached ones made from the cache; ``counted`` is told of
    the files as they are done (those not to be read at once, then each read)."""
    todo = [job for job in jobs if isinstance(job, NewFile)]
    if describe and todo:  # imported once, before any worker starts
        import cuship.wheel.audit  # noqa: F401
    if len(todo) < len(jobs):
        last = next(job for job in reversed(jobs) if not isinstance(job, NewFile))
        counted(len(jobs) - len(todo), last.path.name if isinstance(last, _Skip) else last.filename)
    # To a worker, each job as (path, size, describe): a Path costs more to pickle and unpickle.
    sent = [(job.named, None if job.stamp is None else job.stamp.size, describe) for job in todo]
    read = map_spread(_read_fresh, sent, each=lambda i: counted(1, todo[i].filename))
    fresh = dict(zip((job.key for job in todo), read, strict=True))
    if cache is not None:
        cache.prefetch([job.key for job in jobs if isinstance(job, CachedFile)])
    wheels: dict[str, IndexedWheel] = {}
    skipped: list[Skipped] = []
    for job in jobs:
        try:
            if isinstance(job, _Skip):
                raise job
            if isinstance(job, NewFile):
                wheel = _fresh_wheel(job, fresh[job.key], cache)
            else:
                assert cache is not None  # a file is cached only with a cache
                wheel = _cached_wheel(job, cache)
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


class CachedFile(NamedTuple):
    """A wheel the cache knows, unchanged since: made from the cache, not read."""

    where: str  # the path as given
    key: str
    filename: str
    stamp: FileStamp


class NewFile(NamedTuple):
    """A file to read (new to the cache, or changed): its name is parsed where it is read."""

    where: str  # the path as given
    key: str
    filename: str
    stamp: FileStamp | None  # None: planned without a cache, stamped where it is read

    @property
    def named(self) -> str:
        """The path as a Path words it (what a skip or a wheel's path says)."""
        return self.where if self.key == self.where or _plain(self.where) else str(Path(self.where))


def _unstated(where: str) -> NewFile | _Skip:
    """The file at ``where`` to be read, with no stat (a run with no cache to ask)."""
    key = cache_key(where)
    filename = _name_of(where, key)
    if not filename.endswith(".whl"):
        return _Skip(Path(where), "not a wheel (name does not end in .whl)")
    return NewFile(where, key, filename, None)


def _stated(where: str, stats: Mapping[str, os.stat_result]) -> NewFile | _Skip:
    """The file at ``where`` with its stamp (``stats``: stats already taken), or why it is
    skipped. (Per wheel of every update: the plain absolute path, nearly always, costs no
    more than its stat and a few string tests.)"""
    key = where if _plain_absolute(where) else cache_key(where)
    filename = where.rpartition("/")[2] if key == where else _name_of(where, key)
    if not filename.endswith(".whl"):
        return _Skip(Path(where), "not a wheel (name does not end in .whl)")
    found = stats.get(where)
    if found is None:
        try:
            found = os.stat(key)  # noqa: PTH116 - the string in hand: per wheel
        except OSError as err:
            why = regular_problem(key) or err.strerror or err
            return _Skip(Path(where), f"cannot read it: {why}")
    if not stat.S_ISREG(found.st_mode):
        return _Skip(Path(where), f"it is {file_kind(found.st_mode)}, not a regular file")
    stamp = FileStamp(found.st_size, found.st_mtime_ns, found.st_ino, found.st_ctime_ns)
    return NewFile(where, key, filename, stamp)


def cache_key(path: Path | str) -> str:
    """The scan cache's key of the wheel at ``path``: ``str(Path(path).absolute())``, which
    is the path itself nearly always (a listed directory's files), with no Path made; a
    plain relative path is joined to the working directory, with no Path made either."""
    where = str(path)
    if _plain_absolute(where):
        return where
    if _plain(where) and not where.startswith("/"):
        here = os.getcwd()  # noqa: PTH109 - a string: per wheel
        return f"{here}/{where}" if here != "/" else f"/{where}"
    return str(Path(where).absolute())


def _name_of(where: str, key: str) -> str:
    """``Path(where).name``, with no Path made for a plain path (``key``: its cache key,
    which is ``where`` for a plain absolute path)."""
    return where.rpartition("/")[2] if key == where or _plain(where) else Path(where).name


def _plain(where: str) -> bool:
    """Whether ``str(Path(where)) == where``: no empty or ``.`` part that Path drops."""
    return (
        "//" not in where
        and "/./" not in where
        and not where.startswith("./")
        and not where.endswith(("/", "/."))
        and where not in ("", ".")
    )


def _plain_absolute(where: str) -> bool:
    """Whether ``where`` is already ``str(Path(where).absolute())``: absolute, and without
    the empty or ``.`` parts that Path drops."""
    return (
        where.startswith("/")
        and "//" not in where
        and "/./" not in where
        and not where.endswith(("/", "/."))
    )


def _parse_filename(filename: str, path: Path | str) -> FilenameSays:
    """:func:`~cuship.wheel.read.filename.parse_filename`; a name it refuses is a skip of the
    file at ``path``."""
    try:
        return parse_filename(filename)
    except BadFilename as why:
        raise _Skip(Path(path), str(why)) from why.__cause__


@functools.lru_cache(maxsize=65536)
def _canonical(name: str) -> NormalizedName:
    return canonical_name(name)


def filename_project(filename: str) -> NormalizedName:
    """The project a wheel's filename names, read as its parse reads it (the part before
    the first dash, normalised), without checking the rest: what a valid wheel of that name
    belongs to."""
    return _canonical(filename.partition("-")[0])


# What a worker sends back for one wheel: the fields of its IndexedWheel but ``path`` (the
# parent has it, and a Path costs more to pickle and unpickle than all the rest), in the order
# that _indexed reads them.
_Read = tuple[
    str, str, str, str | None, tuple[str, ...], str, int, str | None, bytes, str,
    Mapping[str, object] | None,
]  # fmt: skip


def _read_fresh(job: tuple[str, int | None, bool]) -> tuple[_Read, FileStamp | None] | str:
    """Parse, read, hash and check the file ``job`` names (path, size when planned, whether
    to describe it): its fields, and its stamp when none was planned; a skip comes back as its
    reason. Runs in a worker process for a large run (:func:`cuship.index._pool.map_spread`),
    so it raises nothing."""
    where, size, describe = job
    try:
        name = _parse_filename(where.rpartition("/")[2], where)
        (_, metadata, no_shared, size, found, problem), entry = _read_wheel(where, size)
        stamp = None if found is None else FileStamp.of(found)
        check_dist_info(metadata.name, name.project)
        requires_dist: list[str] = []
        read = _fields(where, name, size, entry, requires_dist)
        if problem is not None:  # after the checks that word commoner faults
            raise _Skip(Path(where), f"{problem.message}; {problem.hint}")
    except (_Skip, Disagrees) as why:
        return str(why)
    pure = no_shared and size <= _DESCRIBE_PURE
    if describe and pure and split_variant(where)[1] is None:  # a variant: its variant.json too
        described = _describe_pure(where, name, size, metadata, requires_dist)
        return (*read[:-1], described), stamp
    if describe:
        try:
            described = _describe_whole(where)
        except _Skip as why:
            return str(why)
        return (*read[:-1], described), stamp
    return read, stamp


def _describe_whole(where: str) -> Mapping[str, object] | None:
    """The wheel at ``where`` described by reading its shared objects (bounded: see
    :mod:`cuship.wheel.read.members`); a wheel that cannot be described (a member too large or
    escaping, an ELF file that does not parse) is skipped with the reason. An unexpected
    failure leaves it undescribed (None): described again later, where it raises."""
    from cuship.errors import CushipError
    from cuship.index.describe import describe_wheel

    try:
        return dict(describe_wheel(Path(where)))
    except RecordMismatch as err:
        raise _Skip(Path(where), f"{err.message}; {err.hint}") from err
    except CushipError as err:
        raise _Skip(Path(where), f"cannot be described: {err.message}") from err
    except Exception:
        return None


def _describe_pure(
    path: str, name: FilenameSays, size: int, metadata: Member, requires_dist: list[str]
) -> Mapping[str, object] | None:
    """The wheel described from what was read, or None (then it is described as before,
    reading it again, where a failure is worded)."""
    try:
        return describe_pure(
            path,
            name.project,
            name.version,
            name.tags,
            size,
            metadata,
            requires_dist=requires_dist,
        )
    except Exception:
        return None


def _fresh_wheel(
    job: NewFile, done: tuple[_Read, FileStamp | None] | str, cache: ScanCache | None
) -> IndexedWheel:
    if isinstance(done, str):
        raise _Skip(Path(job.named), done)
    read, stamp = done
    wheel = _indexed(Path(job.named), read)
    stamp = job.stamp if job.stamp is not None else stamp
    if cache is not None and stamp is not None:
        cache.put(job.key, stamp, CacheEntry(sha256=wheel.sha256, metadata=wheel.metadata))
    return wheel


def _cached_wheel(job: CachedFile, cache: ScanCache) -> IndexedWheel:
    where = job.where if job.key == job.where or _plain(job.where) else str(Path(job.where))
    name = _parse_filename(job.filename, where)
    return _indexed(Path(where), _fields(where, name, job.stamp.size, cache.entry(job.key)))


def _indexed(path: Path, read: _Read) -> IndexedWheel:
    (filename, project, version, local, tags, sha256, size, python, metadata, digest, described) = (
        read
    )
    return IndexedWheel(
        filename=filename,
        project=cast("NormalizedName", project),
        version=version,
        local=local,
        tags=tags,
        sha256=sha256,
        size=size,
        requires_python=python,
        metadata=metadata,
        metadata_sha256=digest,
        path=path,
        described=described,
    )


def _fields(
    where: str,
    name: FilenameSays,
    size: int,
    entry: CacheEntry,
    requires_dist: list[str] | None = None,
) -> _Read:
    """The wheel's IndexedWheel fields (see :data:`_Read`), after checking its METADATA;
    ``where``: the wheel's path; ``requires_dist`` gets METADATA's Requires-Dist values."""
    try:
        requires_python = check_metadata(where, entry.metadata, name, requires_dist)
    except Disagrees as why:
        raise _Skip(Path(where), str(why)) from why.__cause__
    return (
        where.rpartition("/")[2],
        name.project,
        name.version_text,
        name.local,
        name.tags,
        entry.sha256,
        size,
        requires_python,
        entry.metadata,
        hashlib.sha256(entry.metadata).hexdigest(),
        None,
    )


def _read_wheel(path: str, size: int | None) -> tuple[WheelRead, CacheEntry]:
    """:func:`~cuship.wheel.read.archive.read_wheel`, what it cannot read a skip; with the
    wheel's cache entry."""
    try:
        read = read_wheel(path, size)
    except Unreadable as why:
        raise _Skip(Path(path), str(why)) from why
    except NotRegular as err:
        raise _Skip(Path(path), err.message.replace(f"the wheel {path!r} ", "it ")) from err
    except OSError as err:
        raise _Skip(Path(path), f"cannot read it: {err.strerror or err}") from err
    return read, CacheEntry(sha256=read[0], metadata=read[1].data)
