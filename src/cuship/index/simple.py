"""The static index: :func:`render` plans the whole tree as data, :func:`write` puts it on disk.

Layout of SITE (one copy of each wheel, shared by every index that lists it)::

    index.html                      where the indexes are, for people with a browser
    cuship-index.json               manifest: one record per wheel (tags, hashes, describe)
    files/NAME.whl                  the wheels (absent with --base-url: they live elsewhere)
    files/NAME.whl.metadata         PEP 658 metadata (with --base-url: upload beside the wheels)
    simple/index.html|index.json    combined index, PEP 503 + PEP 691
    simple/PROJECT/index.html|json
    LABEL/simple/...                one sub-index per local version label (cu128torch2.8, ...)
"""

from __future__ import annotations

import errno
import functools
import json
import os
import shutil
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

from packaging.version import Version

from cuship import __version__
from cuship.errors import InputError, NothingToDo, UsageError
from cuship.events import Emit, Event, discard
from cuship.index import _atomic
from cuship.index._cache import ScanCache
from cuship.index._pages import (
    FileLink,
    landing_html,
    project_html,
    project_json,
    root_html,
    root_json,
)
from cuship.index.scan import IndexedWheel, Skipped, scan_report
from cuship.index.yank import yank_reason

__all__ = ["MANIFEST", "Describe", "IndexSummary", "render", "write"]

Describe = Callable[[Path], Mapping[str, object]]
MANIFEST = "cuship-index.json"
CACHE_DIR = ".cuship-cache"
_RESERVED = frozenset({"simple", "files", CACHE_DIR})


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
        }


def check_base_url(base_url: str | None) -> str | None:
    """``base_url`` without trailing slashes, after checking it is an http(s) URL."""
    if base_url is None:
        return None
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(
            f"--base-url must be an http(s) URL, got {base_url!r}",
            hint="e.g. https://github.com/OWNER/REPO/releases/download/TAG",
        )
    return base_url.rstrip("/")


@functools.lru_cache(maxsize=65536)
def _quoted(filename: str) -> str:
    return quote(filename, safe="")


def file_href(filename: str, *, base_url: str | None, depth: int) -> str:
    """Where a page ``depth`` directories below SITE links ``filename`` ('+' becomes %2B)."""
    name = _quoted(filename)
    if base_url is not None:
        return f"{base_url.rstrip('/')}/{name}"
    return "../" * depth + "files/" + name


def variant_labels(wheels: Iterable[IndexedWheel]) -> tuple[str, ...]:
    """Local version labels that get a sub-index (sorted; names the layout uses are left out)."""
    return tuple(sorted({w.local for w in wheels if w.local and w.local not in _RESERVED}))


@functools.lru_cache(maxsize=65536)
def _version(text: str) -> Version:
    return Version(text)


def _sort_key(wheel: IndexedWheel) -> tuple[Version, str]:
    return _version(wheel.version), wheel.filename


def _index_tree(
    prefix: str,
    wheels: Sequence[IndexedWheel],
    *,
    base_url: str | None,
    yanked: Mapping[str, str],
) -> dict[str, bytes]:
    depth = prefix.count("/") + 2
    by_project: dict[str, list[IndexedWheel]] = defaultdict(list)
    for wheel in wheels:
        by_project[wheel.project].append(wheel)
    tree: dict[str, bytes] = {}
    for project, group in by_project.items():
        group.sort(key=_sort_key)
        links = [_link(w, base_url=base_url, depth=depth, yanked=yanked) for w in group]
        versions = sorted({w.version for w in group}, key=_version)
        tree[f"{prefix}/{project}/index.html"] = project_html(project, links)
        tree[f"{prefix}/{project}/index.json"] = project_json(project, links, versions)
    projects = sorted(by_project)
    tree[f"{prefix}/index.html"] = root_html(projects)
    tree[f"{prefix}/index.json"] = root_json(projects)
    return tree


def _link(
    wheel: IndexedWheel, *, base_url: str | None, depth: int, yanked: Mapping[str, str]
) -> FileLink:
    return FileLink(
        filename=wheel.filename,
        href=file_href(wheel.filename, base_url=base_url, depth=depth),
        sha256=wheel.sha256,
        size=wheel.size,
        requires_python=wheel.requires_python,
        metadata_sha256=wheel.metadata_sha256,
        yanked=yank_reason(
            yanked, filename=wheel.filename, project=wheel.project, version=wheel.version
        ),
    )


def _manifest(
    wheels: Sequence[IndexedWheel],
    *,
    base_url: str | None,
    yanked: Mapping[str, str],
    descriptions: Mapping[str, Mapping[str, object]],
) -> bytes:
    labels = variant_labels(wheels)
    records = [
        {
            "filename": w.filename,
            "project": w.project,
            "version": w.version,
            "local": w.local,
            "tags": list(w.tags),
            "sha256": w.sha256,
            "size": w.size,
            "requires_python": w.requires_python,
            "metadata_sha256": w.metadata_sha256,
            "url": file_href(w.filename, base_url=base_url, depth=0),
            "yanked": yank_reason(
                yanked, filename=w.filename, project=w.project, version=w.version
            ),
            "describe": dict(descriptions.get(w.filename, {})),
        }
        for w in wheels
    ]
    document = {
        "schema": "cuship-index/1",
        "generator": f"cuship {__version__}",
        "base_url": base_url,
        "indexes": {"": "simple/", **{label: f"{label}/simple/" for label in labels}},
        "wheels": records,
    }
    return (json.dumps(document, separators=(",", ":"), default=str) + "\n").encode("utf-8")


def render(
    wheels: Iterable[IndexedWheel],
    *,
    base_url: str | None = None,
    yanked: Mapping[str, str] | None = None,
    descriptions: Mapping[str, Mapping[str, object]] | None = None,
) -> dict[str, bytes]:
    """The whole index as ``{path relative to SITE: content}``; wheel files themselves excluded.

    Pure: the same wheels give the same bytes. ``descriptions`` maps a wheel filename to the
    ``describe`` record stored in the manifest.
    """
    base = check_base_url(base_url)
    yanks = yanked or {}
    ordered = sorted(wheels, key=lambda w: (w.project, *_sort_key(w)))
    tree = _index_tree("simple", ordered, base_url=base, yanked=yanks)
    labels = variant_labels(ordered)
    for label in labels:
        subset = [w for w in ordered if w.local == label]
        tree.update(_index_tree(f"{label}/simple", subset, base_url=base, yanked=yanks))
    for wheel in ordered:
        tree[f"files/{wheel.filename}.metadata"] = wheel.metadata
    tree[MANIFEST] = _manifest(
        ordered, base_url=base, yanked=yanks, descriptions=descriptions or {}
    )
    indexes = {"all variants": "simple/", **{label: f"{label}/simple/" for label in labels}}
    tree["index.html"] = landing_html(indexes)
    return tree


def write(
    wheels_or_paths: Iterable[IndexedWheel | Path],
    out: Path,
    *,
    base_url: str | None = None,
    describe: Describe | None = None,
    yanked: Mapping[str, str] | None = None,
    emit: Emit = discard,
) -> IndexSummary:
    """Scan what is given, render the index and swap it in at ``out`` as one step.

    The new tree is built beside ``out`` and exchanged with it atomically, under a lock: a
    failure at any point (a broken disk, ``describe`` raising) leaves the previous index as it
    was. Raises :class:`NothingToDo` when no usable wheel was given.
    """
    base = check_base_url(base_url)
    out = Path(out)
    with _atomic.locked(out, emit):
        _atomic.recover(out, emit)
        _refuse_foreign(out)
        staging = _atomic.staging_dir(out)
        try:
            summary = _build(
                list(wheels_or_paths), out, staging, base, describe, yanked or {}, emit
            )
            _atomic.exchange(staging, out)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    message = (
        f"indexed {summary.wheels} wheels of {summary.projects} projects into {str(out)!r} "
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


def _build(
    given: list[IndexedWheel | Path],
    out: Path,
    staging: Path,
    base_url: str | None,
    describe: Describe | None,
    yanked: Mapping[str, str],
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
    descriptions = {w.filename: describe(w.path) for w in wheels} if describe else {}
    tree = render(wheels, base_url=base_url, yanked=yanked, descriptions=descriptions)
    _write_tree(staging, tree)
    if base_url is None:
        _place_wheels(wheels, staging / "files", out, emit)
    else:
        message = (
            f"upload {str(out / 'files')!r}/*.metadata next to the wheels at {base_url!r}: "
            "pip and uv fetch WHEEL_URL.metadata (PEP 658) before the wheel"
        )
        emit(Event(level="info", topic="index", message=message))
    return IndexSummary(
        site=out,
        wheels=len(wheels),
        projects=len({w.project for w in wheels}),
        variants=variant_labels(wheels),
        skipped=skipped,
        hashed=hashed,
        cached=cached,
        base_url=base_url,
    )


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
