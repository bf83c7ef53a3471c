"""Update an index in place: rewrite only the projects that change, then the roots.

The state is the index itself: ``cuship-index.json`` lists the projects (their labels and
wheel counts), each project's ``simple/PROJECT/cuship.json`` holds its rows. A project is
rewritten when the manifest its rows render to differs from the one on disk; every other
project's files stay as they are, untouched.

Each file is written beside the site and renamed into place, so a reader sees the old file or
the new one. The order keeps every page a reader can reach consistent:

1. the new wheels, their PEP 658 metadata and attestations;
2. per project that changes: its pages;
3. the roots (combined and per label), the landing page, the index's manifest, then the
   removal of the roots of sub-indexes no longer there;
4. per project that changed: the sub-index pages and files it no longer lists, then its
   manifest (last, so a run killed earlier leaves a manifest that differs from the next
   run's, and the project is redone);
5. projects and labels no longer listed: pages first, then their files, then directories.

A run killed anywhere leaves an index pip can read (a new project may be missing from the
root; an old file may linger unlisted) and a rerun of the same command completes it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cuship import _fs
from cuship.errors import InputError
from cuship.events import Emit
from cuship.index._cache import ScanCache
from cuship.index._shared import (
    DIR_MODE,
    FILE_MODE,
    IndexSummary,
    Options,
    SiteState,
    check_replaced,
    describe_all,
    scan_given,
    try_link,
    upload_note,
)
from cuship.index.attached import ATTESTATION_SUFFIX, AttestationRef, find_attestations
from cuship.index.keep import check_in_site, project_rows
from cuship.index.render import (
    MANIFEST,
    PROJECT_MANIFEST,
    ProjectEntry,
    Row,
    group,
    index_manifest,
    project_tree,
    root_pages,
    rows_of,
    torch_group,
    variant_labels,
    variants_files,
)
from cuship.index.scan import IndexedWheel
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
            with open(self.out / rel, "rb") as handle:
                return handle.read(len(data) + 1) == data
        except OSError:
            return False

    def put(self, rel: str, data: bytes) -> None:
        temp = self._temp()
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        try:
            os.fchmod(fd, FILE_MODE)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        self._parent(rel)
        Path(temp).replace(self.out / rel)
        self.written += 1

    def put_changed(self, rel: str, data: bytes) -> None:
        if not self.same(rel, data):
            self.put(rel, data)

    def place(self, rel: str, source: Path) -> None:
        """The wheel at ``source`` published at ``rel`` (hard link, else a copy)."""
        temp = Path(self._temp())
        if not try_link(source, temp):
            try:
                shutil.copyfile(source, temp)
                temp.chmod(FILE_MODE)
            except OSError as err:
                temp.unlink(missing_ok=True)
                raise InputError(
                    f"cannot copy {str(source)!r} into the index: {err.strerror or err}"
                ) from err
        self._parent(rel)
        Path(temp).replace(self.out / rel)
        self.written += 1

    def remove(self, *rels: str) -> None:
        for rel in rels:
            (self.out / rel).unlink(missing_ok=True)

    def prune(self, rel: str) -> None:
        """Remove the directory ``rel`` and the parents it leaves empty (up to the site)."""
        folder = self.out / rel
        shutil.rmtree(folder, ignore_errors=True)
        for parent in folder.parents:
            if parent == self.out or not parent.is_dir() or any(parent.iterdir()):
                break
            parent.rmdir()

    def close(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)


def _touched(
    site: SiteState,
    new: Mapping[str, Sequence[Row]],
    options: Options,
    out: Path,
) -> set[str]:
    """The projects this run may change: with ``keep``, those of the given wheels and those
    the yank entries name; without, every project listed before, given now or left on disk."""
    if options.keep:
        named = {spec_project(spec) for spec in (*options.yanked, *options.unyanked)}
        return set(new) | (named & set(site.projects))
    try:
        on_disk = {entry.name for entry in os.scandir(out / "simple") if entry.is_dir()}
    except OSError:
        on_disk = set()
    return set(new) | set(site.projects) | on_disk


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


@dataclass(frozen=True, slots=True, kw_only=True)
class _Finish:
    """What is left of a rewritten project once the roots are written: the sub-index pages
    and files it no longer lists (a root may link them until then), then its manifest."""

    project: str
    stale_labels: tuple[str, ...]
    stale_files: tuple[str, ...]
    manifest: bytes

    def run(self, site: _Site) -> None:
        for label in self.stale_labels:
            site.prune(f"{label}/simple/{self.project}")
        site.remove(*self.stale_files)
        site.put_changed(f"simple/{self.project}/{PROJECT_MANIFEST}", self.manifest)


def _rewrite_project(
    site: _Site,
    project: str,
    rows: Sequence[Row],
    old: Sequence[Row],
    wheels: Mapping[str, IndexedWheel],
    attestations: Mapping[str, AttestationRef],
) -> _Finish | None:
    """Steps 1 and 2 for one project; None when its manifest shows nothing changed."""
    tree = project_tree(project, rows)
    manifest = f"simple/{project}/{PROJECT_MANIFEST}"
    if site.same(manifest, tree[manifest]):
        return None
    before = {row.filename: row for row in old}
    _publish_files(site, rows, before, wheels, attestations)
    for rel, data in tree.items():
        if rel != manifest:
            site.put_changed(rel, data)
    listed = {row.filename for row in rows}
    if not old:  # a new project: nothing to take away, and its manifest is due before the root
        site.put(manifest, tree[manifest])
    stale_variants = tuple(
        f"simple/{project}/{name}"
        for name in variants_files(old)
        if f"simple/{project}/{name}" not in tree
    )
    return _Finish(
        project=project,
        stale_labels=tuple(sorted(set(variant_labels(old)) - set(variant_labels(rows)))),
        stale_files=stale_variants
        + tuple(
            rel
            for row in old
            if row.filename not in listed and row.base is None
            for rel in _wheel_files(row)
        ),
        manifest=tree[manifest],
    )


def _variants_paths(project: str, rows: Sequence[Row]) -> list[str]:
    """Where the variants.json files of ``rows`` were written: the project's page and the
    torch sub-indexes (a stale one is taken away when its version or group goes)."""
    combined = [row for row in rows if torch_group(row) is None]
    found = [f"simple/{project}/{name}" for name in variants_files(combined)]
    for torch in {torch_group(row) for row in rows} - {None}:
        subset = [row for row in rows if torch_group(row) == torch]
        found += [f"{torch}/simple/{project}/{name}" for name in variants_files(subset)]
    return found


def _drop_project(site: _Site, project: str, old: Sequence[Row], labels: Iterable[str]) -> None:
    """Step 4 for a project no longer listed: pages, files, manifest, directories."""
    site.remove(f"simple/{project}/index.html", f"simple/{project}/index.json")
    for label in {*labels, *variant_labels(old)}:
        site.prune(f"{label}/simple/{project}")
    for row in old:
        if row.base is None:
            site.remove(*_wheel_files(row))
    site.prune(f"simple/{project}")


def _labels_before(state: SiteState, options: Options, out: Path) -> set[str]:
    """The sub-indexes the site had: its manifest's, and without ``keep`` any left on disk
    by a run stopped after the manifest no longer named them."""
    labels = {label for entry in state.projects.values() for label in entry.labels}
    if not options.keep:
        try:
            found = [e.name for e in os.scandir(out) if e.is_dir() and e.name not in _OWN]
        except OSError:
            found = []
        labels.update(name for name in found if (out / name / "simple").is_dir())
    return labels


def _old_rows(out: Path, project: str, options: Options) -> list[Row]:
    """A project's rows on disk. A broken manifest stops a ``keep`` run (its wheels would be
    lost); without ``keep`` the project is rewritten from what was given."""
    try:
        return project_rows(out, project)
    except InputError:
        if options.keep:
            raise
        return []


def _shape(entries: Mapping[str, ProjectEntry]) -> dict[str, tuple[str, ...]]:
    return {project: entry.labels for project, entry in entries.items()}


def _commit(
    site: _Site,
    state: SiteState,
    entries: Mapping[str, ProjectEntry],
    finishes: Sequence[_Finish],
    dropped: Sequence[tuple[str, list[Row], tuple[str, ...]]],
    options: Options,
) -> None:
    """Steps 3 to 5: the roots, then what the rewritten and dropped projects left behind."""
    if _shape(entries) != _shape(state.projects):  # the root pages show only the shape
        for rel, data in root_pages(entries).items():
            site.put_changed(rel, data)
    site.put_changed(MANIFEST, index_manifest(entries, options.base_url))
    now = {label for entry in entries.values() for label in entry.labels}
    gone = sorted(_labels_before(state, options, site.out) - now)
    for label in gone:
        site.remove(f"{label}/simple/index.html", f"{label}/simple/index.json")
    for finish in finishes:
        finish.run(site)
    for project, old, labels in dropped:
        _drop_project(site, project, old, labels)
    for label in gone:
        site.prune(f"{label}/simple")


def update(
    given: Sequence[IndexedWheel | Path],
    out: Path,
    state: SiteState,
    options: Options,
    cache: ScanCache,
    emit: Emit,
) -> tuple[IndexSummary, tuple[IndexedWheel, ...]]:
    """Make the index at ``out`` (described by ``state``) list what this run asks for."""
    wheels, scanned, skipped = scan_given(given, cache, options, emit)
    described = describe_all(wheels, options.describe, cache)
    attestations = find_attestations(wheels, emit)
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
    touched = sorted(_touched(state, new, options, out))
    olds = {project: _old_rows(out, project, options) for project in touched}
    for project in touched:  # before anything is written: refused, the site is as it was
        before = {row.filename: row.sha256 for row in olds[project]}
        for row in new.get(project, ()):
            check_replaced(by_name[row.filename], before.get(row.filename), options, emit)
    entries = dict(state.projects)
    site = _Site(out)
    finishes: list[_Finish] = []
    dropped: list[tuple[str, list[Row], tuple[str, ...]]] = []
    try:
        for project in touched:
            old = olds[project]
            rows = _rows_now(out, old, new.get(project, ()), options)
            if not rows:
                labels = entries.pop(project, ProjectEntry((), 0)).labels
                dropped.append((project, old, labels))
                continue
            finish = _rewrite_project(site, project, rows, old, by_name, attestations)
            if finish is not None:
                finishes.append(finish)
            entries[project] = ProjectEntry.of(rows)
        _commit(site, state, entries, finishes, dropped, options)
    finally:
        site.close()
    upload_note(options.base_url, out, emit)
    total = sum(entry.wheels for entry in entries.values())
    summary = IndexSummary(
        site=out,
        wheels=total,
        projects=len(entries),
        variants=tuple(sorted({label for e in entries.values() for label in e.labels})),
        skipped=skipped,
        hashed=cache.misses,
        cached=cache.hits,
        base_url=options.base_url,
        kept=total - len(wheels) if options.keep else 0,
        rewritten=len(finishes),
    )
    return summary, scanned
