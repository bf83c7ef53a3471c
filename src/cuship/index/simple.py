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
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cuship import _fs
from cuship.errors import InputError, NothingToDo, UsageError
from cuship.events import Emit, Event, discard
from cuship.index._cache import ScanCache
from cuship.index.attached import find_attestations
from cuship.index.keep import Kept, read_existing
from cuship.index.render import CACHE_DIR, MANIFEST, check_base_url, render, variant_labels
from cuship.index.scan import IndexedWheel, Skipped, scan_report

__all__ = ["MANIFEST", "Describe", "IndexSummary", "render", "write"]

Describe = Callable[[Path], Mapping[str, object]]


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
            "skipped": [{"path": str(s.path), "reason": s.reason} for s in self.skipped],
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
    """
    base = check_base_url(base_url)
    out = Path(out)
    with _fs.locked(out, emit):
        _fs.recover(out, emit)
        _refuse_foreign(out)
        staging = _fs.staging_dir(out)
        try:
            summary = _build(
                list(wheels_or_paths),
                out,
                staging,
                _Options(base_url=base, describe=describe, yanked=yanked or {}, keep=keep_existing),
                emit,
            )
            _fs.exchange(staging, out)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    kept = f" ({summary.kept} kept from before)" if keep_existing else ""
    message = (
        f"indexed {summary.wheels} wheels of {summary.projects} projects{kept} into {str(out)!r} "
        f"({summary.hashed} files read, {summary.cached} from cache, "
        f"{len(summary.variants)} variants)"
    )
    emit(Event(level="info", topic="index", message=message, data=summary.as_dict()))
    return summary


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
    emit: Emit,
) -> IndexSummary:
    ready = [item for item in given if isinstance(item, IndexedWheel)]
    paths = [item for item in given if not isinstance(item, IndexedWheel)]
    with _open_cache(out, staging) as cache:
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
    return IndexSummary(
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


def _open_cache(out: Path, staging: Path) -> ScanCache:
    """The previous run's cache, copied into the new tree (the old one stays untouched)."""
    old = out / CACHE_DIR / "scan.sqlite"
    new = staging / CACHE_DIR / "scan.sqlite"
    new.parent.mkdir(parents=True)
    if old.is_file():
        shutil.copyfile(old, new)
    return ScanCache(new)


def _write_tree(root: Path, tree: Mapping[str, bytes]) -> None:
    for folder in sorted({rel.rpartition("/")[0] for rel in tree} - {""}):
        (root / folder).mkdir(parents=True, exist_ok=True)
    base = f"{root}/"
    for rel, content in tree.items():
        # Plain os calls: this loop writes thousands of small files and pathlib costs show.
        fd = os.open(base + rel, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
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
    """Hard-link each wheel into ``files`` (copy across filesystems; reuse the last run's copy)."""
    files.mkdir(exist_ok=True)
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
        except OSError as err:
            raise InputError(f"cannot copy {str(wheel.path)!r} into the index: {err}") from err
        copied += 1
    if copied:
        emit(Event(level="debug", topic="index", message=f"copied {copied} wheels (no hard link)"))


def _try_link(source: Path, target: Path) -> bool:
    try:
        os.link(source, target)
    except OSError as err:
        if err.errno in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOENT, errno.EACCES):
            return False
        raise
    return True
