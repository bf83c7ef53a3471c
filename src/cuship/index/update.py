"""Update an index in place: rewrite only the projects that change, then the roots.

The state is the index itself: ``cuship-index.json`` lists the projects (their labels and
wheel counts), each project's ``simple/PROJECT/cuship.json`` holds its rows. A project is
rewritten when the manifest its rows render to differs from the one on disk; every other
project's files stay as they are, untouched.

Each file is written beside the site and renamed into place, so a reader sees the old file or
the new one; each directory of a project's pages (its ``index.html``, ``index.json`` and, in
the combined index, its manifest) is made beside the site and exchanged with the old one in one
rename, so a reader never sees one page of a project new and the other old. Nothing is taken
away: what the update no longer lists stays published until the next update
(:mod:`cuship.index._retire`). The order keeps every page a reader can reach consistent:

0. the record of what this update retires, in progress (before the first change);
1. the new wheels, their PEP 658 metadata and attestations;
2. per project that changes: the directory of its pages in each sub-index, then in the
   combined index with its manifest (last, so a run killed earlier leaves a manifest that
   differs from the next run's, and the project is redone);
3. the roots (combined and per label), the landing page, the index's manifest;
4. what the previous update retired is deleted, and the record says what this one retired.

A run killed anywhere leaves an index pip can read (a new project may be missing from the
root; an old file may linger unlisted) and a rerun of the same command completes it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Collection, Iterable, Mapping, Sequence
from itertools import chain
from pathlib import Path

from cuship import _fs, _read
from cuship._record import frozen
from cuship.errors import InputError
from cuship.events import Emit
from cuship.index._cache import ScanCache
from cuship.index._retire import RETIRED, Retired
from cuship.index._shared import (
    DIR_MODE,
    FILE_MODE,
    IndexSummary,
    Options,
    SiteState,
    check_replaced,
    describe_all,
    describer_key,
    settle,
    try_link,
    upload_note,
)
from cuship.index._unchanged import Given, Site, context_of, marks_of, scan_update
from cuship.index.attached import ATTESTATION_SUFFIX, AttestationRef, find_attestations
from cuship.index.keep import check_in_site, project_rows
from cuship.index.render import (
    MANIFEST,
    PROJECT_MANIFEST,
    ProjectEntry,
    Row,
    group,
    patched_manifest,
    project_tree,
    root_pages,
    rows_of,
    variant_labels,
)
from cuship.index.scan import IndexedWheel, cache_key
from cuship.index.yank import spec_project

__all__ = ["update"]

_OWN = frozenset({"simple", "files"})


class _Site:
    """Writes into a published site: each file made in a staging directory beside it, then
    renamed into place (same filesystem); removals of files and emptied directories."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.staging = _fs.staging_dir(out, mode=DIR_MODE)
        self._count = 0
        self.written = 0
        self.journal: bytes | None = None  # written before the first change (see _retire)

    def _begin(self) -> None:
        journal, self.journal = self.journal, None
        if journal is not None:
            self.put(RETIRED, journal)

    def _temp(self) -> str:
        self._count += 1
        return f"{self.staging}/{self._count}"

    def _parent(self, rel: str) -> None:
        folder = self.out / rel.rpartition("/")[0]
        if not folder.is_dir():
            missing = [folder, *(p for p in folder.parents if not p.is_dir())]
            for path in reversed(missing):
                path.mkdir(exist_ok=True)
                path.chmod(DIR_MODE)  # mkdir's mode is cut by the umask

    def same(self, rel: str, data: bytes) -> bool:
        try:
            return _read.read_head(self.out / rel, _read.INDEX_FILE, len(data) + 1) == data
        except (OSError, _read.Refused):
            return False

    def put(self, rel: str, data: bytes) -> None:
        self._begin()
        temp = self._temp()
        _write_new(Path(temp), data)
        self._parent(rel)
        _fs.move(Path(temp), self.out, rel)
        self.written += 1

    def put_changed(self, rel: str, data: bytes) -> None:
        if not self.same(rel, data):
            self.put(rel, data)

    def place(self, rel: str, source: Path) -> None:
        """The wheel at ``source`` published at ``rel`` (hard link, else a copy)."""
        self._begin()
        temp = Path(self._temp())
        if not try_link(source, temp):
            try:
                shutil.copyfile(source, temp)
                temp.chmod(FILE_MODE)
            except OSError as err:
                _fs.remove_file(self.staging, temp)
                raise InputError(
                    f"cannot copy {str(source)!r} into the index: {err.strerror or err}"
                ) from err
        self._parent(rel)
        _fs.move(temp, self.out, rel)
        self.written += 1

    def swap(self, rel: str, files: Mapping[str, bytes]) -> None:
        """The directory ``rel`` made to hold exactly ``files``, in one exchange; a file that
        does not change is linked across (it keeps its inode and time)."""
        folder = self.out / rel
        try:
            names = {entry.name for entry in folder.iterdir()}
        except OSError:
            names = set()
        same = {name for name, data in files.items() if self.same(f"{rel}/{name}", data)}
        if names == set(files) == same:
            return
        self._begin()
        temp = Path(self._temp())
        temp.mkdir()
        temp.chmod(DIR_MODE)
        for name, data in files.items():
            if name not in same or not try_link(folder / name, temp / name):
                _write_new(temp / name, data)
        self._parent(rel)
        _fs.exchange(temp, folder)
        self.written += 1

    def remove(self, *rels: str) -> None:
        for rel in rels:
            _fs.remove_file(self.out, rel)

    def prune(self, rel: str) -> None:
        """Remove the directory ``rel`` and the parents it leaves empty (up to the site)."""
        folder = _fs.under(self.out, rel)
        _fs.remove_tree(self.out, rel)
        for parent in folder.parents:
            if parent == self.out or not parent.is_dir() or any(parent.iterdir()):
                break
            _fs.remove_dir(self.out, parent)

    def close(self) -> None:
        _fs.remove_tree(self.out.parent, self.staging)


def _write_new(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _touched(
    site: SiteState,
    new: Mapping[str, Sequence[Row]],
    options: Options,
    out: Path,
    record: Retired,
    quiet: Collection[str],
) -> set[str]:
    """The projects this run may change: with ``keep``, those of the given wheels and those
    the yank entries name; without, every project listed before, given now or left on disk
    (but for one retired, whose page stays until the next update, and those ``quiet``: given
    as they were last rendered)."""
    if options.keep:
        named = {spec_project(spec) for spec in (*options.yanked, *options.unyanked)}
        return set(new) | {project for project in named if project in site.projects}
    try:
        on_disk = {entry.name for entry in os.scandir(out / "simple") if entry.is_dir()}
    except OSError:
        on_disk = set()
    on_disk = {name for name in on_disk if f"simple/{name}" not in record.recorded}
    return (set(new) | set(site.projects) | on_disk) - set(quiet)


def _rows_now(out: Path, old: Sequence[Row], new: Sequence[Row], options: Options) -> list[Row]:
    """The project's rows after this run; a kept row whose file the site lost is refused (the
    page would link a missing file)."""
    if not options.keep:
        return list(new)
    merged = {row.filename: options.keep_yank(row, row.yanked) for row in old}
    merged.update((row.filename, row) for row in new)
    given = {row.filename for row in new}
    for row in old:
        if row.filename not in given:
            check_in_site(out, row.filename, row.base)
    return list(merged.values())


def _wheel_files(row: Row) -> tuple[str, ...]:
    name = f"files/{row.filename}"
    return (name, f"{name}.metadata", f"{name}{ATTESTATION_SUFFIX}")


def _publish_files(
    site: _Site,
    rows: Sequence[Row],
    old: Mapping[str, Row],
    wheels: Mapping[str, IndexedWheel],
    attestations: Mapping[str, AttestationRef],
) -> None:
    """Step 1 for one project: the given wheels it lists that the site does not hold yet."""
    for row in rows:
        wheel = wheels.get(row.filename)
        if wheel is None:
            continue  # kept: its files are in place
        before = old.get(row.filename)
        fresh = before is None or before.sha256 != row.sha256 or before.base != row.base
        if not fresh and (row.base is not None or (site.out / f"files/{row.filename}").is_file()):
            continue
        if row.base is None:
            site.place(f"files/{row.filename}", wheel.path)
        site.put_changed(f"files/{row.filename}.metadata", wheel.metadata)
        ref = attestations.get(row.filename)
        if ref is not None and ref.content is not None:
            site.put_changed(f"files/{row.filename}{ATTESTATION_SUFFIX}", ref.content)


def _folders(project: str, tree: Mapping[str, bytes]) -> list[tuple[str, dict[str, bytes]]]:
    """A project's tree by directory: the sub-indexes first, the combined index (holding the
    manifest) last."""
    folders: dict[str, dict[str, bytes]] = {}
    for rel, data in tree.items():
        folder, _, name = rel.rpartition("/")
        folders.setdefault(folder, {})[name] = data
    combined = f"simple/{project}"
    return sorted(folders.items(), key=lambda item: (item[0] == combined, item[0]))


def _rewrite_project(
    site: _Site,
    project: str,
    rows: Sequence[Row],
    old: Sequence[Row],
    wheels: Mapping[str, IndexedWheel],
    attestations: Mapping[str, AttestationRef],
) -> bool:
    """Steps 1 and 2 for one project; False when its manifest shows nothing changed."""
    tree = project_tree(project, rows)
    manifest = f"simple/{project}/{PROJECT_MANIFEST}"
    if site.same(manifest, tree[manifest]):
        return False
    _publish_files(site, rows, {row.filename: row for row in old}, wheels, attestations)
    for folder, files in _folders(project, tree):
        site.swap(folder, files)
    return True


@frozen
class _Plan:
    """One project this run touches: its rows before and after."""

    project: str
    old: list[Row]
    rows: list[Row]


def _removed(out: Path, plans: Sequence[_Plan], gone: Iterable[str]) -> set[str]:
    """What this run stops listing, as paths of the site: wheels and their files, the pages of
    projects dropped from an index, the sub-indexes no longer there, and the wheel file of one
    the index now links at a ``--base-url`` (its metadata stays: the site still serves it)."""
    found: set[str] = set(gone)
    for plan in plans:
        labels_now = set(variant_labels(plan.rows))
        if not plan.rows:
            found.add(f"simple/{plan.project}")
        found.update(
            f"{label}/simple/{plan.project}" for label in set(variant_labels(plan.old)) - labels_now
        )
        listed = {row.filename: row for row in plan.rows}
        for row in plan.old:
            now = listed.get(row.filename)
            if row.base is not None:
                continue
            if now is None:
                found.update(_wheel_files(row))
            elif now.base is not None:
                found.add(f"files/{row.filename}")
    return {rel for rel in found if os.path.lexists(out / rel)}


def _live(plans: Sequence[_Plan], labels: Collection[str]) -> set[str]:
    """The paths of :func:`_removed`'s kinds that this run lists (never retired, nor deleted);
    ``labels``: the sub-indexes it lists."""
    live = set(labels)
    for plan in plans:
        if plan.rows:
            live.add(f"simple/{plan.project}")
            live.update(f"{label}/simple/{plan.project}" for label in variant_labels(plan.rows))
            live.update(rel for row in plan.rows if row.base is None for rel in _wheel_files(row))
    return live


def _labels_before(state: SiteState, options: Options, out: Path, record: Retired) -> set[str]:
    """The sub-indexes the site had: its manifest's, and without ``keep`` any left on disk
    by a run stopped after the manifest no longer named them (but for retired ones)."""
    labels = set(state.labels)
    if not options.keep:
        try:
            found = [e.name for e in os.scandir(out) if e.is_dir() and e.name not in _OWN]
        except OSError:
            found = []
        labels.update(
            name
            for name in found
            if (out / name / "simple").is_dir() and name not in record.recorded
        )
    return labels


def _old_rows(out: Path, project: str, options: Options, record: Retired) -> list[Row]:
    """A project's rows on disk (none for a retired project: its page is no longer listed). A
    broken manifest stops a ``keep`` run (its wheels would be lost); without ``keep`` the
    project is rewritten from what was given."""
    if f"simple/{project}" in record.recorded:
        return []
    try:
        return project_rows(out, project)
    except InputError:
        if options.keep:
            raise
        return []


class _After:
    """The index's projects after this run: those the manifest listed (``state``) and the
    entries of the projects this run changes (None: no longer listed). The counts, the labels
    and whether the roots change come from the projects changed, not from a statement per
    project of the index."""

    def __init__(self, state: SiteState, plans: Sequence[_Plan]) -> None:
        self.state = state
        listed = state.projects
        self.changed = {p.project: ProjectEntry.of(p.rows) if p.rows else None for p in plans}
        before = [listed[p] for p in self.changed if p in listed]
        now = [entry for entry in self.changed.values() if entry is not None]
        self.wheels = state.wheels - sum(e.wheels for e in before) + sum(e.wheels for e in now)
        self.projects = len(listed) - len(before) + len(now)
        gained = {label for entry in now for label in entry.labels}
        lost = {label for entry in before for label in entry.labels} - gained
        self.labels = set(state.labels) | gained
        if lost:  # another project may still have a label that these no longer have
            raw = listed.raw
            others = (raw[p]["labels"] for p in raw if p not in self.changed)
            self.labels -= lost - set(chain.from_iterable(others))
        # the root pages show only which projects there are and the labels of each
        self.reshaped = any(
            (listed[p].labels if p in listed else None) != (e.labels if e else None)
            for p, e in self.changed.items()
        )

    def entries(self) -> dict[str, ProjectEntry]:
        """Every project's entry (a statement per project: for the roots, when they change)."""
        listed = self.state.projects
        merged = {p: listed[p] for p in listed if p not in self.changed}
        merged.update((p, e) for p, e in self.changed.items() if e is not None)
        return merged


def _commit(site: _Site, after: _After, options: Options) -> None:
    """Step 3: the roots (where they change) and the index's manifest."""
    if after.reshaped:
        for rel, data in root_pages(after.entries()).items():
            site.put_changed(rel, data)
    listed = after.state.projects.raw
    manifest = patched_manifest(listed, after.changed, after.labels, options.base_url)
    if manifest != after.state.text:
        site.put(MANIFEST, manifest)


def _retire(site: _Site, before: Retired, now: Retired) -> None:
    """Step 4, for a run that changed the site or completes one that did: what the update
    before retired is deleted (pages first, then the files they list), and the record says
    what this one retired."""
    if not (site.written or before.in_progress):
        return  # nothing changed: what was retired stays until an update
    due = sorted(now.previous or (), key=lambda rel: (not (site.out / rel).is_dir(), rel))
    for rel in due:
        if (site.out / rel).is_dir() and not (site.out / rel).is_symlink():
            site.prune(rel)
        else:
            site.remove(rel)
    if now.retired:
        site.put_changed(RETIRED, Retired(retired=now.retired).encoded())
    else:
        site.remove(RETIRED)


def _plans(
    state: SiteState,
    new: Mapping[str, Sequence[Row]],
    options: Options,
    record: Retired,
    out: Path,
    by_name: Mapping[str, IndexedWheel],
    emit: Emit,
    quiet: Collection[str],
) -> list[_Plan]:
    plans = []
    for project in sorted(_touched(state, new, options, out, record, quiet)):
        old = _old_rows(out, project, options, record)
        before = {row.filename: row.sha256 for row in old}
        for row in new.get(project, ()):  # before anything is written: refused, nothing changed
            check_replaced(by_name[row.filename], before.get(row.filename), options, emit)
        rows = _rows_now(out, old, new.get(project, ()), options)
        plans.append(_Plan(project=project, old=old, rows=rows))
    return plans


def _check(
    out: Path, state: SiteState, options: Options, cache: ScanCache, record: Retired
) -> Site | None:
    """What finding the projects that need not render takes; None where every project
    renders: with ``keep`` (the manifest holds rows no input gives), or completing an update
    that was stopped (its record in progress names what it had changed)."""
    if options.keep or record.in_progress:
        return None
    retired = {rel.partition("/")[2] for rel in record.recorded if rel.startswith("simple/")}
    return Site(
        root=str(out), listed=state.projects, marks=cache.marks(), changed=frozenset(retired)
    )


def update(
    given: Sequence[IndexedWheel | Path],
    out: Path,
    state: SiteState,
    options: Options,
    cache: ScanCache,
    emit: Emit,
) -> IndexSummary:
    """Make the index at ``out`` (described by ``state``) list what this run asks for."""
    record = Retired.read(out)
    scan = scan_update(given, cache, options, emit, _check(out, state, options, cache, record))
    wheels = scan.wheels
    described = describe_all(wheels, options.describe, cache)
    attestations = find_attestations(wheels, emit, listed=scan.listed)
    new = group(
        rows_of(
            wheels,
            base_url=options.base_url,
            yanked=options.yanked,
            descriptions=described,
            attestations=attestations,
        )
    )
    by_name = {wheel.filename: wheel for wheel in wheels}
    plans = _plans(state, new, options, record, out, by_name, emit, scan.quiet.projects)
    after = _After(state, plans)
    gone = _labels_before(state, options, out, record) - after.labels
    now = record.started(_removed(out, plans, gone), _live(plans, after.labels))
    site = _Site(out)
    site.journal = now.encoded()
    rewritten = 0
    try:
        for plan in plans:
            if plan.rows:
                rewritten += _rewrite_project(
                    site, plan.project, plan.rows, plan.old, by_name, attestations
                )
        _commit(site, after, options)
        _retire(site, record, now)
    finally:
        site.close()
    _settle_and_mark(out, cache, options, scan, [plan.project for plan in plans])
    if plans and not options.keep:
        _forget_others(cache, options, scan)
    upload_note(options.base_url, out, emit)
    total = after.wheels
    return IndexSummary(
        site=out,
        wheels=total,
        projects=after.projects,
        variants=tuple(sorted(after.labels)),
        skipped=scan.skipped,
        hashed=cache.misses,
        cached=cache.hits,
        base_url=options.base_url,
        kept=total - len(wheels) if options.keep else 0,
        rewritten=rewritten,
    )


def _forget_others(cache: ScanCache, options: Options, scan: Given) -> None:
    """The cache forgets what this run does not list: the index lists exactly the wheels
    given. (A run that renders no project lists what the last one listed: nothing to forget.)"""
    keys = {cache_key(wheel.path) for wheel in scan.scanned} | set(scan.quiet.keys)
    who = None if options.describe is None else describer_key(options.describe)
    cache.forget_others(keys, who)


def _settle_and_mark(
    out: Path, cache: ScanCache, options: Options, scan: Given, projects: Sequence[str]
) -> None:
    """The scanned wheels' stamps as this run leaves them (see :func:`settle`), and, without
    ``keep``, the marks of the projects it rendered (one given a ready wheel gets none: its
    inputs are not files)."""
    stamps = settle(cache, [cache_key(w.path) for w in scan.scanned])
    if options.keep:
        return
    context = context_of(options)
    marks = marks_of(scan.scanned, projects, stamps, context, scan.attached, str(out))
    ready = scan.ready
    cache.mark({project: None if project in ready else mark for project, mark in marks.items()})
