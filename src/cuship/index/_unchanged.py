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
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

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
    "Quiet",
    "Site",
    "context_of",
    "inputs_digest",
    "manifest_stamp",
    "marks_of",
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
    lines = [f"{project}\0{context}"]
    for key, (size, mtime, ino, ctime), attestation in sorted(wheels):  # keys differ
        lines.append(f"{key}\0{size}:{mtime}:{ino}:{ctime}\0{_stamp_text(attestation)}")
    return hashlib.sha256("\n".join(lines).encode("utf-8", "surrogateescape")).hexdigest()


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


@dataclass(frozen=True, slots=True, kw_only=True)
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


@dataclass(frozen=True, slots=True, kw_only=True)
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


@dataclass(frozen=True, slots=True, kw_only=True)
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
    stats: dict[str, os.stat_result] = {}
    paths = [item for item in given if not isinstance(item, IndexedWheel)]
    stated = stat_files(wheel_files(paths, listed, stats), stats)
    attached = Attached(listed)
    quiet = Quiet()
    projects = frozenset(wheel.project for wheel in ready)
    if site is not None:
        site = dataclasses.replace(site, changed=site.changed | projects)
        quiet = quiet_projects(stated, site, context_of(options), attached)
    cache.counted(len(quiet.keys))
    plans = look_up(quiet.leave(stated), cache)
    describes = scan_describes(options.describe)
    scan = ScanProgress(len(stated), emit)
    counted = scan.counter(0)
    counted(len(stated) - len(plans), "the wheels of projects left as they are")
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
