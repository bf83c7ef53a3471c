"""What the two ways of writing an index share: options, the summary, scanning and describing
what was given, the index's own manifest as state, its private state (:data:`STATE_DIR`), and
the modes of published files."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import shutil
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import Any

from cuship import _fs, _read
from cuship._record import frozen
from cuship.errors import CheckFailed, InputError
from cuship.events import Emit, Event
from cuship.index._cache import FileStamp, ScanCache, record_text
from cuship.index._pool import DIR_MODE, FILE_MODE, map_spread
from cuship.index.render import (
    INDEX_SCHEMA,
    MANIFEST,
    DescribeTexts,
    ProjectEntry,
    Row,
    encoded_once,
)
from cuship.index.scan import IndexedWheel, Skipped, cache_key
from cuship.index.yank import kept_yank

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "STATE_DIR",
    "Describe",
    "IndexSummary",
    "Listed",
    "Options",
    "SiteState",
    "cache_path",
    "carry_state",
    "check_replaced",
    "describe_all",
    "describer_key",
    "drop_state",
    "has_tree",
    "link_published",
    "place_wheels",
    "scan_describes",
    "settle",
    "try_link",
    "upload_note",
]

Describe = Callable[[Path], Mapping[str, object]]
# Why os.link may fail where a copy still works: another filesystem, a filesystem without hard
# links or a protected source, too many links, a file gone meanwhile (the copy words that)
_LINK_REFUSED = frozenset({errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOENT, errno.EACCES})

_NAMED = 5  # bad wheels named in the error; the rest are in the warnings


STATE_DIR = ".cuship"
"""In a site, its own state, never published (mode 0700; ``cuship serve`` refuses every hidden
path): ``scan-cache.sqlite``, the scan cache (build paths and every METADATA). Inside the site,
so that ``-o SITE`` leaves nothing beside it; it moves with the site when a whole rebuild swaps
a new tree in."""
_STATE_MODE = 0o700


def _state(site: Path) -> Path:
    state = site / STATE_DIR
    if not state.is_dir():
        state.mkdir(parents=True, exist_ok=True)
        state.chmod(_STATE_MODE)  # whatever the umask: a server's user reads none of it
    return state


def cache_path(site: Path) -> Path:
    """The scan cache of ``site`` (its directory made)."""
    return _state(site) / "scan-cache.sqlite"


def has_tree(site: Path) -> bool:
    """Whether ``site`` holds anything but its state: an index written before."""
    try:
        with os.scandir(site) as entries:
            return any(entry.name != STATE_DIR for entry in entries)
    except OSError:
        return False


def drop_state(site: Path) -> None:
    """Remove the state a run made in ``site`` that it then wrote no index into (and ``site``
    itself when that leaves it empty): a failed first run leaves nothing."""
    if has_tree(site):
        return
    _fs.remove_tree(site, STATE_DIR)
    with contextlib.suppress(OSError):
        _fs.remove_dir(site.parent, site.name)


def carry_state(site: Path, staging: Path) -> None:
    """Put ``site``'s state into the tree ``staging`` that replaces it, as hard links: the open
    cache stays the one file the run writes (a copy where the filesystem has no hard links)."""
    import shutil

    state = site / STATE_DIR
    if not state.is_dir():
        return
    into = staging / STATE_DIR
    into.mkdir(exist_ok=True)
    into.chmod(_STATE_MODE)
    with os.scandir(state) as entries:
        names = [entry.name for entry in entries if entry.is_file(follow_symlinks=False)]
    for name in names:
        try:
            os.link(state / name, into / name)
        except OSError as err:
            if err.errno not in _LINK_REFUSED:
                raise
            shutil.copy2(state / name, into / name)


@frozen
class Options:
    base_url: str | None
    describe: Describe | None
    yanked: Mapping[str, str]
    unyanked: frozenset[str]
    keep: bool
    replace_published: bool = False

    def keep_yank(self, row: Row, stored: str | None) -> Row:
        """A kept row with its yank as this run leaves it (see :func:`kept_yank`)."""
        yanked = kept_yank(
            stored,
            yanks=self.yanked,
            unyanks=self.unyanked,
            filename=row.filename,
            project=row.project,
            version=row.version,
        )
        return row if yanked == row.yanked else dataclasses.replace(row, yanked=yanked)


@frozen
class IndexSummary:
    """What :func:`~cuship.index.write` did. ``rewritten``: projects an update rewrote (None
    when the whole tree was rendered)."""

    site: Path
    wheels: int
    projects: int
    variants: tuple[str, ...]
    skipped: tuple[Skipped, ...]
    hashed: int
    cached: int
    base_url: str | None
    kept: int = 0
    rewritten: int | None = None

    @property
    def bad_wheels(self) -> tuple[Skipped, ...]:
        """The files skipped that are named like wheels (a failure, not a note)."""
        return tuple(s for s in self.skipped if s.bad_wheel)

    def check_bad_wheels(self) -> None:
        """Raise :class:`CheckFailed` when a file named like a wheel could not be indexed: the
        index was written without it, and a release job must not pass unnoticed."""
        bad = self.bad_wheels
        if not bad:
            return
        named = ", ".join(f"{s.path.name!r} ({s.reason})" for s in bad[:_NAMED])
        raise CheckFailed(
            f"{len(bad)} wheel(s) could not be indexed: {named}"
            + (" ..." if len(bad) > _NAMED else "")
            + "; the index was written without them",
            hint="fix or remove them, or pass --skip-bad to accept an index without them",
        )

    def to_json(self) -> dict[str, object]:
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
            "rewritten": self.rewritten,
        }


class Listed(Mapping[str, ProjectEntry]):
    """The projects an index's manifest lists, as read: a project's entry is made when it is
    asked for. An update touches a few projects of thousands; the others stay JSON values,
    and counting, listing or copying them runs in C (see :meth:`SiteState.read`)."""

    __slots__ = ("_made", "raw")

    def __init__(self, raw: Mapping[str, Mapping[str, Any]]) -> None:
        self.raw = raw
        self._made: dict[str, ProjectEntry] = {}

    def __getitem__(self, name: str) -> ProjectEntry:
        entry = self._made.get(name)
        if entry is None:
            found = self.raw[name]
            entry = self._made[name] = ProjectEntry(tuple(found["labels"]), found["wheels"])
        return entry

    def __contains__(self, name: object) -> bool:
        return name in self.raw

    def __iter__(self) -> Iterator[str]:
        return iter(self.raw)

    def __len__(self) -> int:
        return len(self.raw)


@frozen
class SiteState:
    """An index's own manifest (schema 2): its projects, their labels and wheel counts, the
    labels and wheels of them all, and the manifest's bytes as read."""

    base_url: str | None
    projects: Listed
    labels: frozenset[str] = frozenset()
    wheels: int = 0
    text: bytes = b""

    @classmethod
    def read(cls, out: Path) -> SiteState | None:
        """The state of the index at ``out``; None when there is none to update in place
        (no index, an older schema, or a manifest that cannot be read: rendered afresh).

        Read at the start of every update: each project's entry is checked (a dict with a
        list of string labels and an integer count) by C loops over the parsed JSON, not by a
        Python statement per project (50,000 wheels are 5,000 projects)."""
        try:
            text = _read.read_bytes(out / MANIFEST, _read.INDEX_FILE)
            document = json.loads(text)
            raw = document["projects"]
            if document.get("schema") != INDEX_SCHEMA or type(raw) is not dict:
                return None
            entries = list(raw.values())
            if not set(map(type, entries)) <= {dict}:
                return None
            listed = list(map(itemgetter("labels"), entries))
            counts = list(map(itemgetter("wheels"), entries))
            if not (set(map(type, listed)) <= {list} and set(map(type, counts)) <= {int}):
                return None
            labels = frozenset(chain.from_iterable(listed))
            if not set(map(type, labels)) <= {str}:
                return None
            base = document.get("base_url")
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        return cls(
            base_url=None if base is None else str(base),
            projects=Listed(raw),
            labels=labels,
            wheels=sum(counts),
            text=text,
        )


def settle(
    cache: ScanCache, keys: Iterable[str], known: Mapping[str, FileStamp] | None = None
) -> dict[str, FileStamp]:
    """Record each scanned wheel's ctime as this run left it (linking into the site moved
    it); ``keys``: the wheels' cache keys (their absolute paths); ``known``: a wheel's stamp
    taken since its last change, by key (else it is taken here). Returns each wheel's stamp
    (one that cannot be stated is left out)."""
    taken = known or {}
    stamps: dict[str, FileStamp] = {}
    for key in keys:
        stamp = taken.get(key)
        if stamp is None:
            try:
                stamp = FileStamp.of(os.stat(key))  # noqa: PTH116 - per wheel
            except OSError:
                continue
        cache.settle(key, stamp)
        stamps[key] = stamp
    return stamps


def scan_describes(describe: Describe | None) -> bool:
    """Whether the scan may describe each pure wheel from what it read: only for cuship's own
    describer, whose record :func:`~cuship.index.describe.describe_pure` makes the same."""
    if describe is None:
        return False
    from cuship.index.describe import describe_wheel

    return describe is describe_wheel


def describer_key(describe: Describe) -> str:
    """The cache key of ``describe``'s records, less the wheel's sha256 that ends it."""
    from cuship.version import __version__

    return f"{__version__}:{describe.__module__}.{describe.__qualname__}:"


def describe_all(
    wheels: Sequence[IndexedWheel],
    describe: Describe | None,
    cache: ScanCache,
    *,
    retain: bool = True,
) -> dict[str, Mapping[str, object]]:
    """``describe`` of each wheel, through the cache: a wheel already described is not reopened.

    The key names the describer and cuship's version (inspection may improve between releases)
    with the wheel's sha256, so a record is reused only for the same bytes and the same code.
    ``retain``: a preloaded cache then forgets the records of other wheels (a forked child,
    whose cache is a copy, leaves that to the parent).
    """
    if describe is None:
        return {}
    who = describer_key(describe)
    found: dict[str, Mapping[str, object]] = {}
    missing: list[IndexedWheel] = []
    for wheel in wheels:
        doc = cache.described(who + wheel.sha256)
        if doc is None:
            missing.append(wheel)
        else:
            found[wheel.filename] = doc
    if scan_describes(describe):  # the scan described these from what it read
        # Such records are shared by the wheels of one label and torch requirements: each
        # is written as JSON once (by identity: every record stays alive meanwhile).
        texts: DescribeTexts = {}
        for wheel in [w for w in missing if w.described is not None]:
            record = wheel.described or {}
            text = encoded_once(record, texts, record_text)
            cache.remember(who + wheel.sha256, record, text=text)
            found[wheel.filename] = record
        missing = [w for w in missing if w.described is None]
    spread = map_spread(_describe_spread, [(describe, w.path) for w in missing])
    for wheel, spread_doc in zip(missing, spread, strict=True):
        # A wheel the worker could not describe is described here, to raise its own error.
        doc = dict(describe(wheel.path)) if spread_doc is None else spread_doc
        cache.remember(who + wheel.sha256, doc)
        found[wheel.filename] = doc
    if retain and cache.preloaded:
        cache.retain_described({who + w.sha256 for w in wheels})
    return found


def _describe_spread(job: tuple[Describe, Path]) -> dict[str, object] | None:
    """One describe in a worker process; None when it raised (it is redone in the parent)."""
    describe, path = job
    try:
        return dict(describe(path))
    except Exception:
        return None


def check_replaced(
    wheel: IndexedWheel, previous_sha256: object, options: Options, emit: Emit
) -> None:
    """A published file never changes its bytes: refuse ``wheel`` when the index lists a file
    of its name with another sha256 (every install pinned to the old hash would break), unless
    ``options.replace_published`` says to replace it (then warn)."""
    if previous_sha256 is None or previous_sha256 == wheel.sha256:
        return
    if options.replace_published:
        message = f"{wheel.filename!r} replaces the published file of that name (sha256 differs)"
        emit(Event(level="warning", topic="index", message=message))
        return
    raise InputError(
        f"{wheel.filename!r} would change the bytes of the published file of that name "
        f"(sha256 {str(previous_sha256)[:12]}... now {wheel.sha256[:12]}...): a published file "
        "never changes, since every install pinned to its hash would break",
        hint="publish the new build under a new name (a new version, or a build number in the "
        "file name); to replace it anyway (yank first, and tell its users), pass "
        "--replace-published",
    )


def upload_note(base_url: str | None, out: Path, emit: Emit) -> None:
    if base_url is not None:
        message = (
            f"upload {str(out / 'files')!r}/*.metadata (and *.intoto.jsonl) next to the wheels "
            f"at {base_url!r}: pip and uv fetch WHEEL_URL.metadata (PEP 658) before the wheel"
        )
        emit(Event(level="info", topic="index", message=message))


def link_published(source: str | Path, target: str | Path) -> os.stat_result | None:
    """Hard-link ``source`` at ``target`` and stat the file linked (the link moved its ctime:
    the stamp the scan cache must keep); None, leaving no link, when a copy must do (another
    filesystem, a mode other than 0644: a link shares the mode, and a published file must be
    0644)."""
    try:
        os.link(source, target)
    except OSError as err:
        if err.errno in _LINK_REFUSED:
            return None
        raise
    found = os.stat(target)  # noqa: PTH116 - per wheel; the inode just linked, not the source path
    if stat.S_IMODE(found.st_mode) == FILE_MODE:
        return found
    _fs.remove_file(Path(target).parent, Path(target).name)  # its mode is shared: copied instead
    return None


def try_link(source: str | Path, target: str | Path) -> bool:
    """:func:`link_published`, saying only whether it linked."""
    return link_published(source, target) is not None


def place_wheels(
    wheels: Sequence[IndexedWheel],
    files: Path,
    out: Path,
    previous: Mapping[str, object],
    emit: Emit,
) -> dict[str, FileStamp]:
    """Hard-link each wheel into ``files`` (reuse the last run's copy, when ``previous`` lists
    it with the same sha256); copy it across filesystems, or when its mode is not 0644 (a link
    shares the mode, and the site's files must be readable by anyone without cuship changing
    the input's mode). ``files`` exists: it is made with the site's other shared folders.

    Returns the stamp of each wheel linked from where it was given (by :func:`cache_key`),
    taken after linking: what :func:`settle` needs, with no second stat."""
    copied = 0
    folder = f"{files}/"  # strings, not Paths: 50,000 wheels at a time
    linked: dict[str, FileStamp] = {}
    for wheel in wheels:
        target = folder + wheel.filename
        found = link_published(wheel.path, target)
        if found is not None:
            linked[cache_key(wheel.path)] = FileStamp.of(found)
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
    return linked
