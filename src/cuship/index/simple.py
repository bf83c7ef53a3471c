"""The static index: :func:`render` (in ``render.py``) plans the tree, :func:`write` puts it on disk.

Layout of SITE (one copy of each wheel, shared by every index that lists it)::

    index.html                      where the indexes are, for people with a browser
    cuship-index.json               the index's manifest: projects, their labels and manifests
    files/NAME.whl                  the wheels (absent with --base-url: they live elsewhere)
    files/NAME.whl.metadata         PEP 658 metadata (with --base-url: upload beside the wheels)
    files/NAME.whl.intoto.jsonl     the wheel's attestation, when one sat beside the wheel
    simple/index.html|index.json    combined index, PEP 503 + PEP 691
    simple/PROJECT/index.html|json
    simple/PROJECT/cuship.json      the project's manifest: one record per wheel (tags, hashes,
                                    yank, describe, attestation); named by its JSON page
    LABEL/simple/...                one sub-index per local version label (cu128torch2.8, ...)

The site is published as it is, so it holds nothing else: directories are 0755 and files 0644
whatever the umask or the wheels' own modes (a wheel that is not 0644 is copied, not linked),
and the scan cache lives beside the site (:func:`cache_path`), never inside it.
"""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Collection, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from cuship import _fs
from cuship.errors import InputError, NothingToDo, UsageError
from cuship.events import Emit, Event, discard
from cuship.index._cache import FileStamp, ScanCache
from cuship.index._pool import MIN_ITEMS, fork_each, workers_available
from cuship.index._shared import (
    DIR_MODE,
    FILE_MODE,
    Describe,
    IndexSummary,
    Options,
    SiteState,
    describe_all,
    scan_given,
    try_link,
    upload_note,
    warn_replaced,
)
from cuship.index.attached import ATTESTATION_SUFFIX, find_attestations
from cuship.index.keep import Kept, read_existing, site_records
from cuship.index.render import (
    MANIFEST,
    ProjectEntry,
    check_base_url,
    group,
    project_tree,
    render,
    root_tree,
    rows_of,
    variant_labels,
)
from cuship.index.scan import IndexedWheel
from cuship.index.update import update

__all__ = ["MANIFEST", "Describe", "IndexSummary", "cache_path", "render", "write"]

_WRITERS = 2  # threads creating files (see _write_tree)


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
    emit: Emit = discard,
) -> IndexSummary:
    """Scan what is given and make the index at ``out`` list it.

    An index that ``cuship index`` wrote before (schema 2) is updated in place: only the
    projects whose wheels, yanks or records change are rewritten, then the roots, each file by
    an atomic rename, in an order that never shows a link to a file not yet there (see
    :mod:`cuship.index.update`). A new site, an older schema, or ``rebuild`` renders the whole
    tree beside ``out`` and swaps it in as one step. Either way a failure at any point leaves
    an index that pip can read, and a rerun completes the work.

    Without ``keep_existing`` the index lists exactly the given wheels; with it, the wheels it
    listed stay (at their earlier URLs and with their yanks; a given wheel of the same
    filename replaces its old record), ``yanked`` entries yank and ``unyanked`` entries lift
    yanks of kept wheels, and nothing need be given. Raises :class:`NothingToDo` when that
    leaves nothing to do. A ``WHEEL.intoto.jsonl`` beside a given wheel is published beside it
    and linked from its row.

    ``out`` may be a symbolic link to a directory (the site is written into its target) or the
    current directory (``.``). Files given but not indexed are in the summary's ``skipped``.
    """
    base = check_base_url(base_url)
    out = _real_target(Path(out))
    given = list(wheels_or_paths)
    options = Options(
        base_url=base,
        describe=describe,
        yanked=yanked or {},
        unyanked=frozenset(unyanked),
        keep=keep_existing,
    )
    with _fs.locked(out, emit):
        _fs.recover(out, emit)
        _refuse_foreign(out)
        site = None if rebuild else SiteState.read(out)
        if not given and not (keep_existing and (options.yanked or options.unyanked)):
            raise NothingToDo(
                "no wheels given",
                hint="pass wheels, or --keep-existing with --yank/--unyank to change yanks",
            )
        with ScanCache(cache_path(out), preload=site is None or not keep_existing) as cache:
            if site is None:
                fresh = not out.exists()
                summary, scanned = _rebuild(given, out, options, cache, emit)
                if not fresh:  # deleting the tree it replaced moved the wheels' ctimes again
                    _settle(cache, scanned)
            else:
                summary, scanned = update(given, out, site, options, cache, emit)
                _settle(cache, scanned)
    _note_current_directory(out, emit)
    kept = f" ({summary.kept} kept from before)" if keep_existing else ""
    how = (
        f"rewrote {summary.rewritten} of {summary.projects} projects"
        if summary.rewritten is not None
        else "rendered every page"
    )
    message = (
        f"indexed {summary.wheels} wheels of {summary.projects} projects{kept} into {str(out)!r} "
        f"({how}; {summary.hashed} files read, {summary.cached} from cache, "
        f"{len(summary.variants)} variants)"
    )
    emit(Event(level="info", topic="index", message=message, data=summary.as_dict()))
    return summary


def _rebuild(
    given: list[IndexedWheel | Path],
    out: Path,
    options: Options,
    cache: ScanCache,
    emit: Emit,
) -> tuple[IndexSummary, tuple[IndexedWheel, ...]]:
    """The whole tree rendered beside ``out`` and exchanged with it atomically."""
    staging = _fs.staging_dir(out, mode=DIR_MODE)
    try:
        summary, scanned = _build(given, out, staging, options, cache, emit)
        _fs.exchange(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return summary, scanned


def cache_path(site: Path) -> Path:
    """The scan cache of ``site``: ``.NAME.cuship-cache.sqlite`` beside it, as its lock is.

    Beside, not inside: the site is what gets published, and the cache holds build paths and
    every METADATA. Beside, not in a user cache directory: it goes where the site goes (a CI
    cache of the workspace keeps both), needs no environment lookup, and leaves nothing behind
    in a home directory for sites long deleted.
    """
    return site.parent / f".{site.name}.cuship-cache.sqlite"


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


def _settle(cache: ScanCache, scanned: Sequence[IndexedWheel]) -> None:
    """Record each wheel's ctime as this run left it (linking into the site moved it)."""
    for wheel in scanned:
        key = str(wheel.path.absolute())  # the scan's key
        try:
            cache.settle(key, FileStamp.of(os.stat(key)))  # noqa: PTH116 - per wheel
        except OSError:
            continue


def _refuse_foreign(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise UsageError(f"output {str(out)!r} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not (out / MANIFEST).is_file():
        raise UsageError(
            f"refusing to replace {str(out)!r}: it is not empty and holds no {MANIFEST}",
            hint="pass a new or empty directory, or one that `cuship index` wrote before",
        )


def _kept(
    out: Path,
    wheels: Sequence[IndexedWheel],
    previous: Mapping[str, object],
    keep: bool,
    emit: Emit,
) -> Kept:
    if not keep:
        return Kept()
    for wheel in wheels:
        warn_replaced(wheel, previous.get(wheel.filename), emit)
    return read_existing(out, replaced={w.filename for w in wheels})


def _build(
    given: list[IndexedWheel | Path],
    out: Path,
    staging: Path,
    options: Options,
    cache: ScanCache,
    emit: Emit,
) -> tuple[IndexSummary, tuple[IndexedWheel, ...]]:
    wheels, scanned, skipped = scan_given(given, cache, options, emit)
    described = describe_all(wheels, options.describe, cache)
    previous = _previous_hashes(out)
    kept = _kept(out, wheels, previous, options.keep, emit)
    if not wheels and not kept.wheels:
        raise NothingToDo(f"{str(out)!r} lists no wheels to keep, and none were given")
    attestations = {**kept.attestations, **find_attestations(wheels, emit)}
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
    everything = [*wheels, *kept.wheels]
    files: dict[str, bytes] = {}
    for wheel in everything:
        files[f"files/{wheel.filename}.metadata"] = wheel.metadata
        ref = attestations.get(wheel.filename)
        if ref is not None and ref.content is not None:
            files[f"files/{wheel.filename}{ATTESTATION_SUFFIX}"] = ref.content
    inside = [w for w in everything if kept.bases.get(w.filename, options.base_url) is None]
    by_project = group(rows)
    made = _make_skeleton(staging, variant_labels(rows))

    def write_projects(projects: Sequence[str]) -> None:
        trees = (project_tree(p, by_project[p]) for p in projects)
        _write_trees(staging, trees, made, threads=len(projects) == len(by_project))

    def write_files() -> None:
        _write_trees(staging, [files], made)
        _place_wheels(inside, staging / "files", out, previous, emit)
        _settle(cache, scanned)  # linked: their ctimes as this run leaves them
        cache.flush()  # what this run read, stored while the children write

    # Projects' pages are rendered and written by forked children while this process writes
    # files/ (metadata, attestations, the wheels' links); the roots last, from every project.
    fork_each(write_projects, _shares(sorted(by_project), len(rows)), meanwhile=write_files)
    entries = {project: ProjectEntry.of(group_rows) for project, group_rows in by_project.items()}
    _write_trees(staging, [root_tree(entries, options.base_url)], made)
    upload_note(options.base_url, out, emit)
    summary = IndexSummary(
        site=out,
        wheels=len(everything),
        projects=len({w.project for w in everything}),
        variants=variant_labels(everything),
        skipped=skipped,
        hashed=cache.misses,
        cached=cache.hits,
        base_url=options.base_url,
        kept=len(kept.wheels),
    )
    return summary, scanned


def _shares(projects: Sequence[str], rows: int) -> list[list[str]]:
    """``projects`` dealt round-robin into one share per core; one share for a small index,
    where forking would cost more than it saves."""
    count = workers_available() if rows >= MIN_ITEMS else 1
    return [list(projects[i::count]) for i in range(min(count, len(projects)) or 1)]


def _make_skeleton(root: Path, labels: Sequence[str]) -> set[str]:
    """The folders that several projects share (``simple``, each ``LABEL/simple``, ``files``),
    made before the projects are shared out: the folders made so far."""
    made: set[str] = set()
    chmod = _umask_cuts(DIR_MODE)
    for folder in ("simple", "files", *(f"{label}/simple" for label in labels)):
        _make_folders(root, folder, made, chmod)
    return made


def _write_file(path: str, content: bytes, chmod: bool) -> None:
    # Plain os calls: thousands of small files, and pathlib's costs show.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
    try:
        if chmod:
            os.fchmod(fd, FILE_MODE)
        view = memoryview(content)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _write_files(items: Sequence[tuple[str, bytes]], chmod: bool) -> None:
    for path, content in items:
        _write_file(path, content, chmod)


_BATCH = 4096  # files rendered and held at once (a 50,000-wheel index renders ~105,000)


def _write_trees(
    root: Path, trees: Iterable[Mapping[str, bytes]], made: set[str], *, threads: bool = True
) -> None:
    """The files of each tree under ``root``, a batch at a time (pages are rendered as they
    are written, not all held), folders first and 0755 whatever the umask; ``made``: the
    folders made so far (updated).

    Creating a file is a filesystem round trip that releases the GIL, so with ``threads`` a
    batch is split between a few threads: on this project's two-core ext4 machine two threads
    create the ~10,000 files of a 5,000-wheel index in 0.6x the time one takes (more were
    slower). A forked child that shares the cores with others writes alone."""
    base = f"{root}/"
    workers = min(_WRITERS, os.cpu_count() or 1) if threads else 1
    file_chmod, dir_chmod = _umask_cuts(FILE_MODE), _umask_cuts(DIR_MODE)
    batch: list[tuple[str, bytes]] = []
    with ThreadPoolExecutor(workers) as pool:

        def flush() -> None:
            if workers == 1:
                _write_files(batch, file_chmod)
            else:
                share = -(-len(batch) // workers)
                parts = [batch[i : i + share] for i in range(0, len(batch), share)]
                for _ in pool.map(_write_files, parts, itertools.repeat(file_chmod)):
                    pass
            batch.clear()

        for tree in trees:
            for rel, content in tree.items():
                folder = rel.rpartition("/")[0]
                if folder and folder not in made:
                    _make_folders(root, folder, made, dir_chmod)
                batch.append((base + rel, content))
            if len(batch) >= _BATCH:
                flush()
        if batch:
            flush()


def _make_folders(root: Path, folder: str, made: set[str], chmod: bool) -> None:
    """``folder`` and its parents under ``root``, 0755: ``chmod`` when the umask cuts that."""
    missing = []
    while folder and folder not in made:
        missing.append(folder)
        folder = folder.rpartition("/")[0]
    base = f"{root}/"
    for path in reversed(missing):
        os.mkdir(base + path, DIR_MODE)  # noqa: PTH102 - os calls: 25,000 folders at 50,000 wheels
        if chmod:
            os.chmod(base + path, DIR_MODE)  # noqa: PTH101
        made.add(path)


def _umask_cuts(mode: int) -> bool:
    """Whether the process umask takes bits off ``mode`` (then a chmod must put them back)."""
    return bool(_fs.umask() & mode)


def _previous_hashes(out: Path) -> dict[str, object]:
    """sha256 of each wheel the index at ``out`` lists (none when it cannot be read)."""
    try:
        return {str(r.get("filename")): r.get("sha256") for r in site_records(out)}
    except InputError:
        return {}


def _place_wheels(
    wheels: Sequence[IndexedWheel],
    files: Path,
    out: Path,
    previous: Mapping[str, object],
    emit: Emit,
) -> None:
    """Hard-link each wheel into ``files`` (reuse the last run's copy, when ``previous`` lists
    it with the same sha256); copy it across filesystems, or when its mode is not 0644 (a link
    shares the mode, and the site's files must be readable by anyone without cuship changing
    the input's mode). ``files`` exists: it is made with the site's other shared folders."""
    copied = 0
    folder = f"{files}/"  # strings, not Paths: 50,000 wheels at a time
    for wheel in wheels:
        target = folder + wheel.filename
        if try_link(wheel.path, target):
            continue
        old = out / "files" / wheel.filename
        if previous.get(wheel.filename) == wheel.sha256 and try_link(old, target):
            continue
        try:
            shutil.copyfile(wheel.path, target)
            os.chmod(target, FILE_MODE)  # noqa: PTH101
        except OSError as err:
            raise InputError(f"cannot copy {str(wheel.path)!r} into the index: {err}") from err
        copied += 1
    if copied:
        emit(Event(level="debug", topic="index", message=f"copied {copied} wheels (no hard link)"))
