"""Which projects an update need not render: those whose inputs are what their manifest was
last rendered from.

A project's pages and manifest are a function of its wheels (each file's path and stamp: the
scan cache holds the sha256 and METADATA read at that stamp), the attestations beside them,
the run's base URL, describer and the yanks that name the project, and cuship's version. The
scan cache keeps, per project, a digest of those inputs and the stamp of the project's
manifest (``simple/PROJECT/cuship.json``) as the run that rendered it left it
(:class:`~cuship.index._cache.ProjectMark`), recorded once that run has finished.

An update without ``keep`` takes one stat per wheel it is given. A project that the index
lists, whose wheels (by path and stamp: a stamp holds the ctime, which no user-space call
sets back) and other inputs give the recorded digest and whose manifest still has the
recorded stamp (nothing rewrote it since) would render to the bytes it has: it is neither
rendered nor compared, and its wheels are not looked up in the cache. Anything else (a new,
changed or missing file, a yank, a manifest touched, a run stopped before it recorded)
renders the project as before. An update completing a stopped one (its retired record in
progress) renders every project, as before.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import stat
import struct
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain, groupby, starmap
from operator import attrgetter, itemgetter, methodcaller
from pathlib import Path
from typing import NamedTuple

from cuship._record import frozen
from cuship.errors import NothingToDo
from cuship.events import Emit
from cuship.index._cache import FileStamp, ProjectMark, ScanCache
from cuship.index._pool import ScanProgress
from cuship.index._shared import Options, describer_key, scan_describes
from cuship.index.attached import ATTESTATION_SUFFIX
from cuship.index.render import PROJECT_MANIFEST
from cuship.index.scan import (
    IndexedWheel,
    NewFile,
    Planned,
    Skipped,
    cache_key,
    filename_project,
    look_up,
    scan_planned,
    stat_files,
    wheel_files,
)
from cuship.index.yank import spec_project
from cuship.version import __version__

__all__ = [
    "Attached",
    "Given",
    "Listing",
    "Quiet",
    "Site",
    "context_of",
    "inputs_digest",
    "listing",
    "manifest_stamp",
    "marks_of",
    "quiet_listed",
    "quiet_projects",
    "scan_update",
]

# One wheel of a project's inputs: its cache key, its stamp, its attestation's stamp
WheelInput = tuple[str, FileStamp, FileStamp | None]


def context_of(options: Options) -> Callable[[str], str]:
    """What besides its wheels a project is rendered from, by project: cuship's version, the
    base URL, the describer, the yanks that name the project."""
    who = "" if options.describe is None else describer_key(options.describe)
    head = f"{__version__}\0{options.base_url or ''}\0{who}"
    yanks: dict[str, list[str]] = defaultdict(list)
    for spec, reason in sorted(options.yanked.items()):
        yanks[spec_project(spec)].append(f"{spec}\0{reason}")
    return lambda project: "\0".join([head, *yanks.get(project, ())])


def inputs_digest(project: str, context: str, wheels: Iterable[WheelInput]) -> str:
    """The digest a project's mark records: its name, its context, its wheels by key."""
    ordered = sorted(wheels)  # keys differ
    keys = [key for key, _stamp, _attestation in ordered]
    stamps = [stamp for _key, stamp, _attestation in ordered]
    attestations = [_stamp_text(attestation) for _key, _stamp, attestation in ordered]
    return _digest(project, context, keys, stamps, attestations)


_STAMP_BYTES = struct.Struct("<4q")  # a stamp's four integers, as the digest takes them


def _digest(
    project: str,
    context: str,
    keys: Sequence[str],
    stamps: Sequence[tuple[int, int, int, int]],
    attestations: Sequence[str],
) -> str:
    """:func:`inputs_digest` of wheels given as columns sorted by key: the keys, the stamps
    as 64-bit integers and the attestations' stamps as text, each column joined by C, with
    no statement (nor decimal text) per wheel: the check of an unchanged folder of 50,000
    wheels runs this for each project. (A digest of another formula than the last run's
    differs: its projects are rendered once more, to the same bytes, and marked anew.)"""
    head = f"{project}\0{context}\0{len(keys)}\0".encode("utf-8", "surrogateescape")
    digest = hashlib.blake2b(head, digest_size=32)  # half sha256's instructions here
    digest.update("\0".join(keys).encode("utf-8", "surrogateescape"))
    digest.update(b"".join(starmap(_STAMP_BYTES.pack, stamps)))
    digest.update("\0".join(attestations).encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def _stamp_text(stamp: FileStamp | None) -> str:
    return "-" if stamp is None else f"{stamp[0]}:{stamp[1]}:{stamp[2]}:{stamp[3]}"


def manifest_stamp(site: str, project: str) -> FileStamp | None:
    """The stamp of ``project``'s manifest in ``site`` (None when it cannot be stated)."""
    try:
        return FileStamp.of(os.stat(f"{site}/simple/{project}/{PROJECT_MANIFEST}"))  # noqa: PTH116
    except OSError:
        return None


class Attached:
    """The stamps of attestations beside wheels: each folder's attestation names come from
    its listing (or are listed once here), so a wheel without one costs no system call."""

    def __init__(self, listed: Mapping[str, frozenset[str]] | None = None) -> None:
        self._names: dict[str, frozenset[str] | None] = dict(listed or {})

    def stamp(self, where: str) -> FileStamp | None:
        """The stamp of the attestation beside the wheel at ``where``, if there is one."""
        folder, _, name = where.rpartition("/")
        folder = folder or ("/" if where.startswith("/") else ".")
        if folder not in self._names:
            self._names[folder] = _attestations_in(folder)
        names = self._names[folder]
        if names is not None and (not names or name + ATTESTATION_SUFFIX not in names):
            return None
        try:
            return FileStamp.of(os.stat(where + ATTESTATION_SUFFIX))  # noqa: PTH116
        except OSError:
            return None


def _attestations_in(folder: str) -> frozenset[str] | None:
    try:
        names = os.listdir(folder)  # noqa: PTH208 - names only
    except OSError:
        return None
    return frozenset(n for n in names if n.endswith(ATTESTATION_SUFFIX))


@frozen
class Quiet:
    """The projects an update leaves as they are, and the cache keys of their wheels."""

    projects: frozenset[str] = frozenset()
    keys: tuple[str, ...] = ()

    def leave(self, plans: Iterable[Planned]) -> list[Planned]:
        """``plans`` but for the wheels of the projects left as they are."""
        if not self.keys:
            return list(plans)
        keys = set(self.keys)
        return [plan for plan in plans if not isinstance(plan, NewFile) or plan.key not in keys]


@frozen
class Site:
    """What the check needs of the site: where it is, the projects its manifest lists with
    their marks, the projects that must render whatever their marks say."""

    root: str
    listed: Mapping[str, object]
    marks: Mapping[str, ProjectMark]
    changed: frozenset[str]


def quiet_projects(
    plans: Sequence[Planned],
    site: Site,
    context: Callable[[str], str],
    attached: Attached,
) -> Quiet:
    """The projects among ``plans`` that need not render (see the module's docstring)."""
    by_project: dict[str, list[NewFile]] = defaultdict(list)
    for plan in plans:
        if type(plan) is NewFile and plan.stamp is not None:
            by_project[filename_project(plan.filename)].append(plan)
    changed = site.changed
    quiet = {
        project: tuple(files)
        for project, files in by_project.items()
        if project not in changed and _unchanged(project, files, site, context, attached)
    }
    return Quiet(
        projects=frozenset(quiet),
        keys=tuple(plan.key for files in quiet.values() for plan in files),
    )


def _unchanged(
    project: str,
    files: Sequence[NewFile],
    site: Site,
    context: Callable[[str], str],
    attached: Attached,
) -> bool:
    mark = site.marks.get(project)
    if mark is None or project not in site.listed:
        return False
    if len({plan.filename for plan in files}) != len(files):
        return False  # the same name twice: rendered, to say so
    wheels = [(plan.key, plan.stamp, attached.stamp(plan.where)) for plan in files if plan.stamp]
    if inputs_digest(project, context(project), wheels) != mark.inputs:
        return False
    return manifest_stamp(site.root, project) == mark.manifest


_STAMP = attrgetter("st_size", "st_mtime_ns", "st_ino", "st_ctime_ns")
_MODE = attrgetter("st_mode")
_IS_WHEEL = methodcaller("endswith", ".whl")
_IS_ATTESTATION = methodcaller("endswith", ".whl" + ATTESTATION_SUFFIX)
_ATTESTED_LINE = ".whl" + ATTESTATION_SUFFIX + "\n"
_PREFIX = methodcaller("partition", "-")


class Listing(NamedTuple):
    """A folder given, listed: its key in :class:`Attached`, the folder as given (with a
    slash) and its wheels' names (sorted) and cache keys, its attestations' names."""

    folder: str
    where: str
    names: list[str]
    keys: list[str]
    attestations: frozenset[str]


def listing(path: Path) -> Listing | None:
    """The folder ``path`` listed, when it holds wheels and their attestations and nothing
    else (None otherwise: such a folder goes the way that says what it skips and why)."""
    where = str(path)
    try:
        if where.endswith(".whl") or not stat.S_ISDIR(os.stat(where).st_mode):  # noqa: PTH116
            return None
        names = sorted(os.listdir(where))  # noqa: PTH208 - names only
    except OSError:
        return None
    text = "\n" + "\n".join(names) + "\n"  # one text: C counts what the names end with
    wheels, attestations = names, frozenset[str]()
    if text.count(_ATTESTED_LINE):
        attestations = frozenset(filter(_IS_ATTESTATION, names))
        wheels = list(filter(_IS_WHEEL, names))
    if len(wheels) != text.count(".whl\n") or "\n." in text:
        return None  # another file, or a hidden one
    if len(wheels) + len(attestations) != len(names):
        return None
    folder = where.rstrip("/") + "/"
    base = cache_key(folder + "x")[:-1]
    return Listing(str(path), folder, wheels, list(map(base.__add__, wheels)), attestations)


def quiet_listed(
    listings: Sequence[Listing], site: Site, context: Callable[[str], str]
) -> tuple[Quiet, list[NewFile]] | None:
    """:func:`quiet_projects` of folders listed, and the files of the other projects to scan;
    None when a file cannot be stated or is not a regular file (the way that says why).

    The loop over the wheels is C's: their keys, stats and stamps, the projects their names
    start with, the lines of each project's digest are made by ``map``; Python runs once
    per project, and per wheel only for wheels with an attestation beside them and for the
    projects that render."""
    names = list(chain.from_iterable(found.names for found in listings))
    keys = list(chain.from_iterable(found.keys for found in listings))
    wheres = _Wheres(listings)
    try:
        stats = list(map(os.stat, keys))
    except OSError:
        return None
    if not all(map(stat.S_ISREG, map(_MODE, stats))):
        return None
    stamps: list[tuple[int, int, int, int]] = list(map(_STAMP, stats))
    attested = {
        found.where + name[: -len(ATTESTATION_SUFFIX)]
        for found in listings
        for name in found.attestations
    }
    spans: dict[str, list[int]] = defaultdict(list)
    start = 0
    for prefix, run in groupby(map(itemgetter(0), map(_PREFIX, names))):
        end = start + len(list(run))
        spans[filename_project(prefix)].extend(range(start, end))
        start = end
    quiet = {
        project
        for project, found in spans.items()
        if project not in site.changed
        and _unchanged_at(project, found, site, context, (names, keys, wheres, stamps), attested)
    }
    rendered = sorted(i for project, found in spans.items() if project not in quiet for i in found)
    new = [NewFile(wheres[i], keys[i], names[i], FileStamp(*stamps[i])) for i in rendered]
    held = tuple(map(keys.__getitem__, chain.from_iterable(spans[p] for p in sorted(quiet))))
    return Quiet(projects=frozenset(quiet), keys=held), new


class _Wheres:
    """Each wheel's path as given, by its index among the listings' wheels: made only for
    the wheels that need it (those of projects that render, those with an attestation)."""

    def __init__(self, listings: Sequence[Listing]) -> None:
        self._starts: list[tuple[int, str]] = []
        start = 0
        for found in listings:
            self._starts.append((start, found.where))
            start += len(found.names)
        self._names = list(chain.from_iterable(found.names for found in listings))

    def __getitem__(self, index: int) -> str:
        where = next(w for start, w in reversed(self._starts) if start <= index)
        return where + self._names[index]


_Columns = tuple[list[str], list[str], _Wheres, list[tuple[int, int, int, int]]]


def _unchanged_at(
    project: str,
    found: list[int],
    site: Site,
    context: Callable[[str], str],
    columns: _Columns,
    attested: set[str],
) -> bool:
    """:func:`_unchanged` for the wheels at ``found`` in ``columns`` (names, keys, as given,
    stamps), ``attested``: the wheels (as given) with an attestation beside them."""
    mark = site.marks.get(project)
    if mark is None or project not in site.listed:
        return False
    names, keys, wheres, stamps = columns
    first, last = found[0], found[-1] + 1
    order: Sequence[int] = range(first, last)
    if last - first != len(found):  # not one run of a folder's sorted names
        if len({names[i] for i in found}) != len(found):
            return False  # the same name twice: rendered, to say so
        order = sorted(found, key=keys.__getitem__)
    if order == range(first, last):
        ordered_keys, ordered_stamps = keys[first:last], stamps[first:last]
    else:
        ordered_keys = [keys[i] for i in order]
        ordered_stamps = [stamps[i] for i in order]
    attestations = ["-"] * len(found)
    if attested:
        for n, i in enumerate(order):
            if (where := wheres[i]) in attested:
                attestations[n] = _stamp_text(_stat_of(where + ATTESTATION_SUFFIX))
    digest = _digest(project, context(project), ordered_keys, ordered_stamps, attestations)
    return digest == mark.inputs and manifest_stamp(site.root, project) == mark.manifest


def _stat_of(path: str) -> FileStamp | None:
    try:
        return FileStamp.of(os.stat(path))  # noqa: PTH116
    except OSError:
        return None


def marks_of(
    wheels: Iterable[IndexedWheel],
    projects: Iterable[str],
    stamps: Mapping[str, FileStamp],
    context: Callable[[str], str],
    attached: Attached,
    root: str,
) -> dict[str, ProjectMark | None]:
    """The marks of ``projects``, rendered from ``wheels`` (those scanned) and now in the
    site at ``root``; ``stamps``: each wheel's stamp as the run leaves it, by cache key. A
    project whose inputs cannot all be stated gets None (it renders next time)."""
    by_project: dict[str, list[IndexedWheel]] = defaultdict(list)
    for wheel in wheels:
        by_project[wheel.project].append(wheel)
    return {
        project: _mark(project, by_project.get(project, ()), stamps, context, attached, root)
        for project in projects
    }


def _mark(
    project: str,
    wheels: Sequence[IndexedWheel],
    stamps: Mapping[str, FileStamp],
    context: Callable[[str], str],
    attached: Attached,
    root: str,
) -> ProjectMark | None:
    inputs: list[WheelInput] = []
    for wheel in wheels:
        key = cache_key(wheel.path)
        stamp = stamps.get(key)
        if stamp is None:
            return None
        inputs.append((key, stamp, attached.stamp(str(wheel.path))))
    manifest = manifest_stamp(root, project)
    if not inputs or manifest is None:
        return None
    return ProjectMark(inputs_digest(project, context(project), inputs), manifest)


@frozen
class Given:
    """What an update was given, scanned: the usable wheels (ready and scanned), those
    scanned, the files skipped, the projects left as they are, the attestations beside, the
    projects of the wheels given ready (not as files)."""

    wheels: list[IndexedWheel]
    scanned: tuple[IndexedWheel, ...]
    skipped: tuple[Skipped, ...]
    quiet: Quiet
    attached: Attached
    listed: Mapping[str, frozenset[str]]
    ready: frozenset[str] = frozenset()


def _folders_quiet(
    paths: Sequence[Path], site: Site | None, options: Options, listed: dict[str, frozenset[str]]
) -> tuple[Quiet, list[Planned], int] | None:
    """Where an update is given folders that hold only wheels (and their attestations):
    the projects left as they are, the files of the others, how many wheels in all; None
    otherwise (every file then goes through :func:`stat_files`)."""
    if site is None or not paths:
        return None
    found = [listing(path) for path in paths]
    if None in found:
        return None
    listings = [item for item in found if item is not None]
    checked = quiet_listed(listings, site, context_of(options))
    if checked is None:
        return None
    for item in listings:
        listed[item.folder] = frozenset(name for name in item.attestations)
    quiet, new = checked
    return quiet, list(new), sum(len(item.names) for item in listings)


def scan_update(
    given: Sequence[IndexedWheel | Path],
    cache: ScanCache,
    options: Options,
    emit: Emit,
    site: Site | None,
) -> Given:
    """The usable wheels among ``given``, scanned through the cache, but for the wheels of
    projects that need not render (``site``: what the check needs; None: render them all),
    which are only stated. An empty result is :class:`NothingToDo` unless kept wheels or
    projects left as they are carry the run."""
    ready = [item for item in given if isinstance(item, IndexedWheel)]
    listed: dict[str, frozenset[str]] = {}
    paths = [item for item in given if not isinstance(item, IndexedWheel)]
    projects = frozenset(wheel.project for wheel in ready)
    if site is not None:
        site = dataclasses.replace(site, changed=site.changed | projects)
    found = _folders_quiet(paths, site, options, listed)
    if found is not None:  # folders of wheels: checked by C loops (see quiet_listed)
        quiet, stated, total = found
    else:
        stats: dict[str, os.stat_result] = {}
        files: list[Planned] = list(stat_files(wheel_files(paths, listed, stats), stats))
        quiet = Quiet()
        if site is not None:
            quiet = quiet_projects(files, site, context_of(options), Attached(listed))
        stated, total = quiet.leave(files), len(files)
    attached = Attached(listed)
    cache.counted(len(quiet.keys))
    plans = look_up(stated, cache)
    describes = scan_describes(options.describe)
    scan = ScanProgress(total, emit)
    counted = scan.counter(0)
    counted(total - len(plans), "the wheels of projects left as they are")
    scanned, skipped = scan_planned(
        plans, cache=cache, emit=emit, describe=describes, counted=counted
    )
    scan.finish(cache.misses, cache.hits)
    wheels = ready + list(scanned)
    if not wheels and given and not quiet.projects:
        raise NothingToDo(
            f"no usable wheel among {len(given)} input(s); {len(skipped)} skipped",
            hint="pass .whl files or directories holding them (see the warnings above)",
        )
    return Given(
        wheels=wheels,
        scanned=scanned,
        skipped=skipped,
        quiet=quiet,
        attached=attached,
        listed=listed,
        ready=projects,
    )
