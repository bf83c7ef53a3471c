"""The static index: :func:`render` (in ``render.py``) plans the tree, :func:`write` puts it on disk.

Layout of SITE (one copy of each wheel, shared by every index that lists it)::

    index.html                      where the indexes are, for people with a browser
    cuship-index.json               the index's manifest: projects, their labels and manifests
    cuship-retired.json             what the last update stopped listing, kept until the next
    files/NAME.whl                  the wheels (absent with --base-url: they live elsewhere)
    files/NAME.whl.metadata         PEP 658 metadata (with --base-url: upload beside the wheels)
    files/NAME.whl.intoto.jsonl     the wheel's attestation, when one sat beside the wheel
    simple/index.html|index.json    combined index, PEP 503 + PEP 691
    simple/PROJECT/index.html|json
    simple/PROJECT/cuship.json      the project's manifest: one record per wheel (tags, hashes,
                                    yank, describe, attestation); named by its JSON page
    LABEL/simple/...                one sub-index per local version label (cu128torch2.8, ...)
    .cuship/                        the site's own state, never published: the scan cache
                                    (:data:`~cuship.index._shared.STATE_DIR`)

The site is published as it is, but for ``.cuship/``: directories are 0755 and files 0644
whatever the umask or the wheels' own modes (a wheel that is not 0644 is copied, not linked);
``.cuship/`` is 0700, and ``cuship serve`` serves no hidden path. Beside the site, only while a
run lasts: its lock ``.SITE.lock`` (removed when the run ends) and the staging tree of a whole
rebuild (swapped in).
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from cuship import _fs
from cuship._record import frozen
from cuship.errors import InputError, NothingToDo, UsageError
from cuship.events import Emit, Event, discard
from cuship.index._cache import CacheDelta, FileStamp, ProjectMark, ScanCache
from cuship.index._pool import (
    MIN_ITEMS,
    Counted,
    ScanProgress,
    deal,
    fork_map,
    in_child,
    make_folders,
    umask_cuts,
    workers_available,
    write_trees,
)
from cuship.index._retire import carry_over
from cuship.index._row import Row
from cuship.index._shared import (
    DIR_MODE,
    Describe,
    IndexSummary,
    Options,
    SiteState,
    cache_path,
    carry_state,
    check_replaced,
    describe_all,
    describer_key,
    drop_state,
    has_tree,
    place_wheels,
    scan_describes,
    settle,
    upload_note,
)
from cuship.index._unchanged import Attached, context_of, marks_of
from cuship.index.attached import ATTESTATION_SUFFIX, AttestationRef, find_attestations
from cuship.index.keep import Kept, read_existing, site_records
from cuship.index.render import (
    MANIFEST,
    DescribeTexts,
    ProjectEntry,
    check_base_url,
    group,
    project_tree,
    render,
    root_tree,
    rows_of,
)
from cuship.index.scan import IndexedWheel, Skipped, cache_key, scan_files, wheel_files
from cuship.wheel.read.filename import canonical_name

__all__ = ["MANIFEST", "Describe", "IndexSummary", "cache_path", "render", "write"]


def write(
    wheels_or_paths: Iterable[IndexedWheel | Path],
    out: Path,
    *,
    base_url: str | None = None,
    describe: Describe | None = None,
    yanked: Mapping[str, str] | None = None,
    unyanked: Collection[str] = (),
    keep_existing: bool = False,
    rebuild: bool = False,
    replace_published: bool = False,
    emit: Emit = discard,
) -> IndexSummary:
    """Scan what is given and make the index at ``out`` list it.

    An index that ``cuship index`` wrote before (schema 2) is updated in place: only the
    projects whose wheels, yanks or records change are rewritten, then the roots, each file by
    an atomic rename, in an order that never shows a link to a file not yet there (see
    :mod:`cuship.index.update`). A new site, an older schema, or ``rebuild`` renders the whole
    tree beside ``out`` and swaps it in as one step. Either way a failure at any point leaves
    an index that pip can read, and a rerun completes the work, and what the index stops
    listing stays published, unlisted, until the next run (``cuship-retired.json``).

    Without ``keep_existing`` the index lists exactly the given wheels; with it, the wheels it
    listed stay (at their earlier URLs and with their yanks; a given wheel of the same
    filename replaces its old record), ``yanked`` entries yank and ``unyanked`` entries lift
    yanks of kept wheels, and nothing need be given. Raises :class:`NothingToDo` when that
    leaves nothing to do. A ``WHEEL.intoto.jsonl`` beside a given wheel is published beside it
    and linked from its row.

    A given wheel whose name the index already lists with other bytes is refused (exit 2)
    before anything is written, unless ``replace_published``: a published file never changes.

    ``out`` may be a symbolic link to a directory (the site is written into its target) or the
    current directory (``.``). Files given but not indexed are in the summary's ``skipped``.
    """
    base = check_base_url(base_url)
    out = _real_target(Path(out))
    options = Options(
        base_url=base,
        describe=describe,
        yanked=yanked or {},
        unyanked=frozenset(unyanked),
        keep=keep_existing,
        replace_published=replace_published,
    )
    summary = _locked_write(list(wheels_or_paths), out, options, rebuild=rebuild, emit=emit)
    _note_current_directory(out, emit)
    message = _said(summary, out, keep_existing=keep_existing)
    emit(Event(level="info", topic="index", message=message, data=summary.to_json()))
    return summary


def _locked_write(
    given: list[IndexedWheel | Path], out: Path, options: Options, *, rebuild: bool, emit: Emit
) -> IndexSummary:
    """:func:`_write` under the site's lock, after recovering what an interrupted run left;
    a new site's state is dropped again when it fails."""
    with _fs.locked(out, emit, transient=True):
        _fs.recover(out, emit)
        _refuse_foreign(out)
        fresh = not has_tree(out)
        try:
            return _write(given, out, options, fresh=fresh, rebuild=rebuild, emit=emit)
        except BaseException:
            if fresh:
                drop_state(out)
            raise


def _said(summary: IndexSummary, out: Path, *, keep_existing: bool) -> str:
    """What a run did, in one line: wheels, projects, pages rewritten, files read."""
    kept = f" ({summary.kept} kept from before)" if keep_existing else ""
    how = (
        f"rewrote {summary.rewritten} of {summary.projects} projects"
        if summary.rewritten is not None
        else "rendered every page"
    )
    return (
        f"indexed {summary.wheels} wheels of {summary.projects} projects{kept} into {str(out)!r} "
        f"({how}; {summary.hashed} files read, {summary.cached} from cache, "
        f"{len(summary.variants)} variants)"
    )


def _write(
    given: list[IndexedWheel | Path],
    out: Path,
    options: Options,
    *,
    fresh: bool,
    rebuild: bool,
    emit: Emit,
) -> IndexSummary:
    """The index at ``out`` (locked) made to list what is given: a whole rebuild or an update
    (see :func:`write`); ``fresh``: ``out`` held no index."""
    site = None if rebuild else SiteState.read(out)
    if not given and not (options.keep and (options.yanked or options.unyanked)):
        raise NothingToDo(
            "no wheels given",
            hint="pass wheels, or --keep-existing with --yank/--unyank to change yanks",
        )
    # An update reads the rows it needs: it makes few wheels from the cache
    with ScanCache(cache_path(out), preload=site is None) as cache:
        if site is not None:
            from cuship.index.update import update  # here: a first run never needs it

            return update(given, out, site, options, cache, emit)
        summary, scanned, marks = _rebuild(given, out, options, cache, emit)
        if not fresh:  # deleting the tree it replaced moved the wheels' ctimes again
            settle(cache, scanned)
        # Where that moved them the marks are stale: the next update renders all
        cache.mark(marks if fresh else {}, replace=True)
        return summary


def _rebuild(
    given: list[IndexedWheel | Path],
    out: Path,
    options: Options,
    cache: ScanCache,
    emit: Emit,
) -> tuple[IndexSummary, list[str], dict[str, ProjectMark | None]]:
    """The whole tree rendered beside ``out`` and exchanged with it atomically; the summary,
    the cache keys of the wheels scanned and the marks of the projects rendered."""
    staging = _fs.staging_dir(out, mode=DIR_MODE)
    try:
        summary, scanned, marks = _build(given, out, staging, options, cache, emit)
        if out.is_dir():
            carry_state(out, staging)
            carry_over(out, staging)
        _fs.exchange(staging, out)
    except BaseException:
        _fs.remove_tree(out.parent, staging)
        raise
    return summary, scanned, marks


def _real_target(out: Path) -> Path:
    """The directory to replace: a symlink's target, ``.`` as the directory it names."""
    try:
        real = out.resolve()
    except (OSError, RuntimeError) as err:  # a symlink loop
        raise UsageError(f"cannot resolve the output {str(out)!r}: {err}") from err
    if real.parent == real:
        raise UsageError(f"refusing to write an index over {str(real)!r}", hint="pass a directory")
    return real


def _note_current_directory(out: Path, emit: Emit) -> None:
    try:
        here = Path.cwd()
    except OSError:  # the current directory was the site, now replaced
        here = None
    if here is None or here == out or out in here.parents:
        message = (
            f"{str(out)!r} was replaced by a new directory: a shell inside it still sees the old "
            "one (empty); `cd .` to see the index"
        )
        emit(Event(level="info", topic="index", message=message))


def _refuse_foreign(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise UsageError(f"output {str(out)!r} exists and is not a directory")
    if out.is_dir() and has_tree(out) and not (out / MANIFEST).is_file():
        raise UsageError(
            f"refusing to replace {str(out)!r}: it is not empty and holds no {MANIFEST}",
            hint="pass a new or empty directory, or one that `cuship index` wrote before",
        )


@frozen(kw_only=False)
class _Share:
    """The part of a rebuild one process does: the given files and wheels of some projects,
    and the names of those projects' wheels the earlier index keeps."""

    files: tuple[str, ...]
    ready: tuple[IndexedWheel, ...]
    kept: tuple[str, ...]
    pages_first: bool = False  # write the project pages before files/ (see _build)
    slot: int = 0  # where it counts its files scanned (see ScanProgress)


@frozen(kw_only=False)
class _Built:
    """What a share's process reports: its projects' entries for the roots, its counts, its
    skips and events (a child's, to be emitted by the parent), the cache keys of the wheels
    it scanned and of their describe records, what its copy of the cache learnt, and the
    marks of its projects (see :mod:`cuship.index._unchanged`)."""

    entries: dict[str, ProjectEntry]
    usable: int
    kept: int
    skipped: tuple[Skipped, ...]
    events: tuple[Event, ...]
    scanned: tuple[str, ...]
    described: tuple[str, ...]
    delta: CacheDelta
    marks: dict[str, ProjectMark | None]


class _Run(
    NamedTuple
):  # a NamedTuple: a 10-field frozen dataclass costs the import 3M instructions
    """What every share of a rebuild reads: where the index goes and is staged, the options,
    the scan cache (a child's own copy), the hashes the earlier index published, the wheels
    it keeps, the folders made before the shares, the attestations in the folders listed
    (:func:`wheel_files`), the stats of the files given by name; ``alone``: one share only
    (then its files are written by a few threads)."""

    out: Path
    staging: Path
    options: Options
    cache: ScanCache
    previous: Mapping[str, object]
    kept: Kept
    made: frozenset[str]
    attached: Mapping[str, frozenset[str]]
    stats: Mapping[str, os.stat_result]
    alone: bool


def _build(
    given: list[IndexedWheel | Path],
    out: Path,
    staging: Path,
    options: Options,
    cache: ScanCache,
    emit: Emit,
) -> tuple[IndexSummary, list[str], dict[str, ProjectMark | None]]:
    """Every page of the index written under ``staging``.

    The projects are dealt out in shares, one per core; each share's wheels are scanned,
    described and linked, and its pages rendered and written, start to end, by one process:
    this one for the first share, a forked child for each other (the children see the
    preloaded cache; nothing is pickled to them). Every share creates entries in files/, and
    a folder takes one creation at a time, so every other share writes its pages first: while
    one fills files/, the other fills its projects' folders (two processes creating a site's
    files this way took 4.3 s on this project's machine, both in files/ first 5.1 s). Each
    child writes what its copy of the cache learnt into the cache's file, through a
    connection of its own, and sends back what the roots need; this process writes the
    roots. A small index is one share, done here."""
    attached: dict[str, frozenset[str]] = {}  # attestations in the folders listed
    stats: dict[str, os.stat_result] = {}  # of the files given by name
    paths = [item for item in given if not isinstance(item, IndexedWheel)]
    files = wheel_files(paths, attached, stats)
    ready = [item for item in given if isinstance(item, IndexedWheel)]
    previous = _previous_hashes(out)
    kept = read_existing(out) if options.keep else Kept()
    shares = _shares(files, ready, kept.wheels)
    made = _make_skeleton(staging)
    if options.describe is not None:  # imported once, before the children start
        import cuship.wheel.audit  # noqa: F401

    run = _Run(
        out=out, staging=staging, options=options, cache=cache, previous=previous, kept=kept,
        made=frozenset(made), attached=attached, stats=stats, alone=len(shares) == 1,
    )  # fmt: skip
    scan = ScanProgress(len(files), emit, shares=len(shares))
    built = fork_map(lambda share: _build_share(share, run, emit, scan.counter(share.slot)), shares)
    for part in built:
        cache.absorb(part.delta)
        for event in part.events:
            emit(event)
    scan.finish(cache.misses, cache.hits)
    skipped = _in_order((s for part in built for s in part.skipped), files)
    scanned = [key for part in built for key in part.scanned]
    if cache.preloaded:
        cache.retain(set(scanned))
        if options.describe is not None:
            cache.retain_described({key for part in built for key in part.described})
    if given and not sum(part.usable for part in built):
        raise NothingToDo(
            f"no usable wheel among {len(given)} input(s); {len(skipped)} skipped",
            hint="pass .whl files or directories holding them (see the warnings above)",
        )
    summary = _write_roots(run, built, skipped, made, emit)
    return summary, scanned, {name: mark for part in built for name, mark in part.marks.items()}


def _write_roots(
    run: _Run, built: Sequence[_Built], skipped: tuple[Skipped, ...], made: set[str], emit: Emit
) -> IndexSummary:
    """The roots of the index written from what the shares report; the summary."""
    entries = {project: entry for part in built for project, entry in part.entries.items()}
    if not entries:
        raise NothingToDo(f"{str(run.out)!r} lists no wheels to keep, and none were given")
    write_trees(run.staging, [root_tree(entries, run.options.base_url)], made)
    upload_note(run.options.base_url, run.out, emit)
    return IndexSummary(
        site=run.out,
        wheels=sum(entry.wheels for entry in entries.values()),
        projects=len(entries),
        variants=tuple(sorted({label for entry in entries.values() for label in entry.labels})),
        skipped=skipped,
        hashed=run.cache.misses,
        cached=run.cache.hits,
        base_url=run.options.base_url,
        kept=sum(part.kept for part in built),
    )


def _in_order(skipped: Iterable[Skipped], files: Sequence[str]) -> tuple[Skipped, ...]:
    """The shares' skips in the order their files were given."""
    found = list(skipped)
    if not found:
        return ()
    order = {Path(path): i for i, path in reversed(list(enumerate(files)))}
    return tuple(sorted(found, key=lambda s: order.get(s.path, 0)))


def _build_share(share: _Share, run: _Run, emit: Emit, counted: Counted) -> _Built:
    """One share of :func:`_build`, here or in a forked child; ``counted``: told of its files
    as they are scanned."""
    forked = in_child()
    events: list[Event] = []
    say = events.append if forked else emit
    options = run.options
    scanned, skipped = scan_files(
        share.files,
        cache=run.cache,
        emit=say,
        describe=scan_describes(options.describe),
        stats=run.stats,
        counted=counted,
    )
    wheels = [*share.ready, *scanned]
    described = describe_all(wheels, options.describe, run.cache, retain=False)
    names = {w.filename for w in wheels}
    for wheel in wheels:
        check_replaced(wheel, run.previous.get(wheel.filename), options, say)
    kept = run.kept.only([name for name in share.kept if name not in names])
    attestations = {**kept.attestations, **find_attestations(wheels, say, listed=run.attached)}
    rows = _share_rows(wheels, kept, described, attestations, options)
    by_project = group(rows)
    keys = [cache_key(w.path) for w in scanned]
    delta, stamps = _write_share(share, run, wheels, kept, attestations, by_project, keys, say)
    who = "" if options.describe is None else describer_key(options.describe)
    return _Built(
        entries={project: ProjectEntry.of(rows) for project, rows in by_project.items()},
        usable=len(wheels),
        kept=len(kept.wheels),
        skipped=skipped,
        events=tuple(events),
        scanned=tuple(keys),
        described=tuple(who + w.sha256 for w in wheels) if who else (),
        delta=delta,
        marks=_share_marks(scanned, share, by_project, stamps, run),
    )


def _share_rows(
    wheels: Sequence[IndexedWheel],
    kept: Kept,
    described: Mapping[str, Mapping[str, object]],
    attestations: Mapping[str, AttestationRef],
    options: Options,
) -> list[Row]:
    """The rows of a share's wheels, then of the wheels the earlier index keeps (their yanks
    carried over)."""
    rows = rows_of(
        wheels,
        base_url=options.base_url,
        yanked=options.yanked,
        descriptions=described,
        attestations=attestations,
    )
    for row in rows_of(
        kept.wheels,
        base_url=options.base_url,
        descriptions=kept.descriptions,
        bases=kept.bases,
        attestations=attestations,
    ):
        rows.append(options.keep_yank(row, kept.yanks.get(row.filename)))
    return rows


def _write_share(
    share: _Share,
    run: _Run,
    wheels: Sequence[IndexedWheel],
    kept: Kept,
    attestations: Mapping[str, AttestationRef],
    by_project: Mapping[str, list[Row]],
    keys: Sequence[str],
    say: Emit,
) -> tuple[CacheDelta, dict[str, FileStamp]]:
    """A share's files (into the one folder files/, shared by every share) and pages (into each
    project's folder, its own), in the order :attr:`_Share.pages_first` says; what its copy of
    the cache learnt, and the stamps of the wheels it linked."""
    everything = [*wheels, *kept.wheels]
    files: dict[str, bytes] = {}
    for wheel in everything:
        files[f"files/{wheel.filename}.metadata"] = wheel.metadata
        ref = attestations.get(wheel.filename)
        if ref is not None and ref.content is not None:
            files[f"files/{wheel.filename}{ATTESTATION_SUFFIX}"] = ref.content
    base_url = run.options.base_url
    inside = [w for w in everything if kept.bases.get(w.filename, base_url) is None]
    made = set(run.made)  # this process's own record of the folders it made
    stamps: dict[str, FileStamp] = {}

    def write_files() -> CacheDelta:
        write_trees(run.staging, [files], made, threads=run.alone)
        linked = place_wheels(inside, run.staging / "files", run.out, run.previous, say)
        stamps.update(settle(run.cache, keys, linked))  # linked: their ctimes as this run leaves
        # All this share's cache learns, stored now: a share that writes its files first
        # stores them while the others are still at work (two shares storing at the same
        # time take turns on SQLite's lock, and one waits for the other)
        if in_child():  # through a connection of its own
            return run.cache.store_shared()
        run.cache.flush()
        return run.cache.take_delta()

    def write_pages() -> None:
        texts: DescribeTexts = {}  # rows share describe records: each is written once
        trees = (project_tree(p, by_project[p], describe_texts=texts) for p in sorted(by_project))
        write_trees(run.staging, trees, made, threads=run.alone)

    if share.pages_first:
        write_pages()
        return write_files(), stamps
    delta = write_files()
    write_pages()
    return delta, stamps


def _share_marks(
    scanned: Sequence[IndexedWheel],
    share: _Share,
    projects: Collection[str],
    stamps: Mapping[str, FileStamp],
    run: _Run,
) -> dict[str, ProjectMark | None]:
    """The marks of a share's projects, rendered under ``staging`` from the files given
    (none with ``keep``, nor for a project given a ready wheel: such inputs are not files)."""
    if run.options.keep:
        return {}
    ready = {wheel.project for wheel in share.ready}
    given = [project for project in projects if project not in ready]
    context = context_of(run.options)
    return marks_of(scanned, given, stamps, context, Attached(run.attached), str(run.staging))


def _shares(
    files: Sequence[str], ready: Sequence[IndexedWheel], kept: Sequence[IndexedWheel]
) -> list[_Share]:
    """The wheels dealt out by project, one share per core (one for a small index, where
    forking would cost more than it saves): the projects with most wheels first, each to
    the share with fewest so far. A file goes by the project its name starts with (a name
    that does not parse goes somewhere, to be skipped there with its reason)."""
    count = workers_available() if len(files) + len(ready) + len(kept) >= MIN_ITEMS else 1
    names: dict[str, str] = {}

    def project_of(filename: str) -> str:
        start = filename.partition("-")[0]
        name = names.get(start)
        if name is None:
            name = names[start] = canonical_name(start)
        return name

    given: dict[str, list[str]] = defaultdict(list)
    ready_of: dict[str, list[IndexedWheel]] = defaultdict(list)
    kept_of: dict[str, list[str]] = defaultdict(list)
    for path in files:
        given[project_of(path.rpartition("/")[2])].append(path)
    for wheel in ready:
        ready_of[wheel.project].append(wheel)
    for wheel in kept:
        kept_of[wheel.project].append(wheel.filename)
    sizes = Counter({p: len(v) for p, v in given.items()})
    sizes.update({p: len(v) for p, v in ready_of.items()})
    sizes.update({p: len(v) for p, v in kept_of.items()})
    shares = [
        _Share(
            files=tuple(path for p in projects for path in given.get(p, ())),
            ready=tuple(wheel for p in projects for wheel in ready_of.get(p, ())),
            kept=tuple(name for p in projects for name in kept_of.get(p, ())),
            pages_first=index % 2 == 1,
            slot=index,
        )
        for index, projects in enumerate(deal(sizes, count))
    ]
    return shares or [_Share((), (), ())]


def _make_skeleton(root: Path) -> set[str]:
    """The folders that every share writes into (``simple``, ``files``), made before the
    shares start: the folders made so far. (A label's ``LABEL/simple`` is made by whichever
    share first needs it.)"""
    made: set[str] = set()
    chmod = umask_cuts(DIR_MODE)
    for folder in ("simple", "files"):
        make_folders(root, folder, made, chmod)
    return made


def _previous_hashes(out: Path) -> dict[str, object]:
    """sha256 of each wheel the index at ``out`` lists (none when it cannot be read)."""
    try:
        return {str(r.get("filename")): r.get("sha256") for r in site_records(out)}
    except InputError:
        return {}
