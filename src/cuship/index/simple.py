"""The static index: :func:`render` (in ``render.py``) plans the tree, :func:`write` puts it on disk.

Layout of SITE (one copy of each wheel, shared by every index that lists it)::

    index.html                      where the indexes are, for people with a browser
    cuship-index.json               manifest: one record per wheel (tags, hashes, describe)
    files/NAME.whl                  the wheels (absent with --base-url: they live elsewhere)
    files/NAME.whl.metadata         PEP 658 metadata (with --base-url: upload beside the wheels)
    files/NAME.whl.intoto.jsonl     the wheel's attestation, when one sat beside the wheel
    simple/index.html|index.json    combined index, PEP 503 + PEP 691
    simple/PROJECT/index.html|json
    LABEL/simple/...                one sub-index per local version label (cu128torch2.8, ...)

The site is published as it is, so it holds nothing else: directories are 0755 and files 0644
whatever the umask or the wheels' own modes (a wheel that is not 0644 is copied, not linked),
and the scan cache lives beside the site (:func:`cache_path`), never inside it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cuship import _fs
from cuship.errors import InputError, NothingToDo, UsageError
from cuship.events import Emit, Event, discard
from cuship.index._cache import FileStamp, ScanCache
from cuship.index.attached import find_attestations
from cuship.index.keep import Kept, read_existing
from cuship.index.render import MANIFEST, check_base_url, render, variant_labels
from cuship.index.scan import IndexedWheel, Skipped, scan_report

__all__ = ["MANIFEST", "Describe", "IndexSummary", "cache_path", "render", "write"]

Describe = Callable[[Path], Mapping[str, object]]
_DIR_MODE = 0o755
_FILE_MODE = 0o644


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexSummary:
    """What :func:`write` did."""

    site: Path
    wheels: int
    projects: int
    variants: tuple[str, ...]
    skipped: tuple[Skipped, ...]
    hashed: int
    cached: int
    base_url: str | None
    kept: int = 0

    def as_dict(self) -> dict[str, object]:
        return {
            "site": str(self.site),
            "wheels": self.wheels,
            "projects": self.projects,
            "variants": list(self.variants),
            "skipped": [
                {"path": str(s.path), "reason": s.reason, "bad_wheel": s.bad_wheel}
                for s in self.skipped
            ],
            "hashed": self.hashed,
            "cached": self.cached,
            "base_url": self.base_url,
            "kept": self.kept,
        }


def write(
    wheels_or_paths: Iterable[IndexedWheel | Path],
    out: Path,
    *,
    base_url: str | None = None,
    describe: Describe | None = None,
    yanked: Mapping[str, str] | None = None,
    keep_existing: bool = False,
    emit: Emit = discard,
) -> IndexSummary:
    """Scan what is given, render the index and swap it in at ``out`` as one step.

    The new tree is built beside ``out`` and exchanged with it atomically, under a lock: a
    failure at any point (a broken disk, ``describe`` raising) leaves the previous index as it
    was. Raises :class:`NothingToDo` when no usable wheel was given. With ``keep_existing``
    the wheels the previous index at ``out`` lists stay listed, at their earlier URLs (a given
    wheel of the same filename replaces its old record). A ``WHEEL.intoto.jsonl`` beside a
    given wheel is published beside it and linked from its row.

    ``out`` may be a symbolic link to a directory (the site is written into its target) or the
    current directory (``.``). Files given but not indexed are in the summary's ``skipped``.
    """
    base = check_base_url(base_url)
    out = _real_target(Path(out))
    options = _Options(base_url=base, describe=describe, yanked=yanked or {}, keep=keep_existing)
    with _fs.locked(out, emit):
        _fs.recover(out, emit)
        _refuse_foreign(out)
        staging = _fs.staging_dir(out, mode=_DIR_MODE)
        try:
            with _scan_cache(cache_path(out)) as cache:
                summary, scanned = _build(list(wheels_or_paths), out, staging, options, cache, emit)
                _fs.exchange(staging, out)
                _settle(cache, scanned)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    _note_current_directory(out, emit)
    kept = f" ({summary.kept} kept from before)" if keep_existing else ""
    message = (
        f"indexed {summary.wheels} wheels of {summary.projects} projects{kept} into {str(out)!r} "
        f"({summary.hashed} files read, {summary.cached} from cache, "
        f"{len(summary.variants)} variants)"
    )
    emit(Event(level="info", topic="index", message=message, data=summary.as_dict()))
    return summary


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


@contextlib.contextmanager
def _scan_cache(path: Path) -> Iterator[ScanCache]:
    """The cache at ``path``, worked on as a copy that replaces it only when the run succeeds."""
    work = path.with_name(path.name + ".new")
    if path.is_file():
        shutil.copyfile(path, work)
    else:
        work.unlink(missing_ok=True)
    try:
        with ScanCache(work) as cache:
            yield cache
    except BaseException:
        work.unlink(missing_ok=True)
        raise
    work.replace(path)


def _settle(cache: ScanCache, scanned: Sequence[IndexedWheel]) -> None:
    """Record each wheel's ctime as this run left it (linking into the site moved it)."""
    for wheel in scanned:
        try:
            cache.settle(str(wheel.path.absolute()), FileStamp.of(wheel.path.stat()))
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


@dataclass(frozen=True, slots=True, kw_only=True)
class _Options:
    base_url: str | None
    describe: Describe | None
    yanked: Mapping[str, str]
    keep: bool


def _kept(out: Path, wheels: Sequence[IndexedWheel], keep: bool, emit: Emit) -> Kept:
    if not keep:
        return Kept()
    previous = _previous_hashes(out)
    for wheel in wheels:
        if previous.get(wheel.filename, wheel.sha256) != wheel.sha256:
            message = f"{wheel.filename!r} replaces the indexed file of that name (sha256 differs)"
            emit(Event(level="warning", topic="index", message=message))
    return read_existing(out, replaced={w.filename for w in wheels})


def _build(
    given: list[IndexedWheel | Path],
    out: Path,
    staging: Path,
    options: _Options,
    cache: ScanCache,
    emit: Emit,
) -> tuple[IndexSummary, tuple[IndexedWheel, ...]]:
    ready = [item for item in given if isinstance(item, IndexedWheel)]
    paths = [item for item in given if not isinstance(item, IndexedWheel)]
    scanned, skipped = scan_report(paths, cache=cache, emit=emit)
    cache.retain({str(w.path.absolute()) for w in scanned})
    hashed, cached = cache.misses, cache.hits
    wheels = ready + list(scanned)
    if not wheels:
        raise NothingToDo(
            f"no usable wheel among {len(given)} input(s); {len(skipped)} skipped",
            hint="pass .whl files or directories holding them (see the warnings above)",
        )
    described = _describe_all(wheels, options.describe, cache)
    base_url = options.base_url
    kept = _kept(out, wheels, options.keep, emit)
    descriptions = {**kept.descriptions, **described}
    attestations = {**kept.attestations, **find_attestations(wheels, emit)}
    everything = [*wheels, *kept.wheels]
    tree = render(
        everything,
        base_url=base_url,
        yanked=options.yanked,
        descriptions=descriptions,
        bases=kept.bases,
        attestations=attestations,
    )
    _write_tree(staging, tree)
    inside = [w for w in everything if kept.bases.get(w.filename, base_url) is None]
    _place_wheels(inside, staging / "files", out, emit)
    if base_url is not None:
        message = (
            f"upload {str(out / 'files')!r}/*.metadata (and *.intoto.jsonl) next to the wheels "
            f"at {base_url!r}: pip and uv fetch WHEEL_URL.metadata (PEP 658) before the wheel"
        )
        emit(Event(level="info", topic="index", message=message))
    summary = IndexSummary(
        site=out,
        wheels=len(everything),
        projects=len({w.project for w in everything}),
        variants=variant_labels(everything),
        skipped=skipped,
        hashed=hashed,
        cached=cached,
        base_url=base_url,
        kept=len(kept.wheels),
    )
    return summary, scanned


def _describe_all(
    wheels: Sequence[IndexedWheel], describe: Describe | None, cache: ScanCache
) -> dict[str, Mapping[str, object]]:
    """``describe`` of each wheel, through the cache: a wheel already described is not reopened.

    The key names the describer and cuship's version (inspection may improve between releases)
    with the wheel's sha256, so a record is reused only for the same bytes and the same code.
    """
    if describe is None:
        return {}
    from cuship import __version__

    who = f"{__version__}:{describe.__module__}.{describe.__qualname__}:"
    found: dict[str, Mapping[str, object]] = {}
    for wheel in wheels:
        key = who + wheel.sha256
        doc = cache.described(key)
        if doc is None:
            doc = dict(describe(wheel.path))
            cache.remember(key, doc)
        found[wheel.filename] = doc
    cache.retain_described({who + w.sha256 for w in wheels})
    return found


def _folders(paths: Iterable[str]) -> list[str]:
    """Every directory the relative ``paths`` need, parents first."""
    found: set[str] = set()
    for rel in paths:
        folder = rel.rpartition("/")[0]
        while folder and folder not in found:
            found.add(folder)
            folder = folder.rpartition("/")[0]
    return sorted(found)


def _write_tree(root: Path, tree: Mapping[str, bytes]) -> None:
    for folder in _folders(tree):
        (root / folder).mkdir()
        (root / folder).chmod(_DIR_MODE)  # mkdir's mode is cut by the umask
    base = f"{root}/"
    for rel, content in tree.items():
        # Plain os calls: this loop writes thousands of small files and pathlib costs show.
        fd = os.open(base + rel, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _FILE_MODE)
        try:
            os.fchmod(fd, _FILE_MODE)
            view = memoryview(content)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)


def _previous_hashes(out: Path) -> dict[str, str]:
    try:
        document = json.loads((out / MANIFEST).read_bytes())
        return {str(r["filename"]): str(r["sha256"]) for r in document["wheels"]}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def _place_wheels(wheels: Sequence[IndexedWheel], files: Path, out: Path, emit: Emit) -> None:
    """Hard-link each wheel into ``files`` (reuse the last run's copy); copy it across
    filesystems, or when its mode is not 0644 (a link shares the mode, and the site's files
    must be readable by anyone without cuship changing the input's mode)."""
    files.mkdir(exist_ok=True)
    files.chmod(_DIR_MODE)
    previous = _previous_hashes(out)
    copied = 0
    for wheel in wheels:
        target = files / wheel.filename
        if _try_link(wheel.path, target):
            continue
        old = out / "files" / wheel.filename
        if previous.get(wheel.filename) == wheel.sha256 and _try_link(old, target):
            continue
        try:
            shutil.copyfile(wheel.path, target)
            target.chmod(_FILE_MODE)
        except OSError as err:
            raise InputError(f"cannot copy {str(wheel.path)!r} into the index: {err}") from err
        copied += 1
    if copied:
        emit(Event(level="debug", topic="index", message=f"copied {copied} wheels (no hard link)"))


def _try_link(source: Path, target: Path) -> bool:
    try:
        if stat.S_IMODE(source.stat().st_mode) != _FILE_MODE:
            return False
        os.link(source, target)
    except OSError as err:
        if err.errno in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOENT, errno.EACCES):
            return False
        raise
    return True
