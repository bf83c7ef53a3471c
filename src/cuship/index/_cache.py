"""The scan cache: a wheel's sha256 and METADATA, keyed by its path and :class:`FileStamp`
(size, mtime, inode, ctime), and what ``describe`` said of it, keyed by (describer, sha256).

One SQLite file, kept beside the site, never inside it (see :func:`cuship.index.simple.write`).
A wheel whose path and stamp are unchanged is not read again, so adding one wheel to an index
of thousands hashes one file, reads one METADATA and inspects one wheel's extensions.

Size and mtime alone can be kept by a rewrite (``os.utime``, or two writes within one tick of
the filesystem clock); the inode changes when a file is replaced, and the ctime whenever its
bytes or times are touched, which no user-space call can set back. Hard-linking a wheel into the
site also moves its ctime, so :meth:`ScanCache.settle` records the ctime the run left behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import NamedTuple

from cuship import _fs
from cuship._record import frozen

__all__ = ["CacheDelta", "CacheEntry", "FileStamp", "ProjectMark", "ScanCache", "record_text"]

# PRAGMA user_version; a cache of another version is dropped. 3: wheels are held to their
# RECORD, which no row of 2 was (each wheel is read again once, and one that fails is skipped)
_VERSION = 3
_WAIT_S = 600.0  # how long a write waits for another process's transaction to end
_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS wheels (
        path TEXT PRIMARY KEY,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        ino INTEGER NOT NULL,
        ctime_ns INTEGER NOT NULL,
        sha256 TEXT NOT NULL,
        metadata BLOB NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS described (
        key TEXT PRIMARY KEY,
        doc TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS projects (
        name TEXT PRIMARY KEY,
        inputs TEXT NOT NULL,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        ino INTEGER NOT NULL,
        ctime_ns INTEGER NOT NULL
    )""",
)


_COLUMNS = "path, size, mtime_ns, ino, ctime_ns, sha256, metadata"
_INSERT_ROW = "INSERT OR REPLACE INTO wheels VALUES (?, ?, ?, ?, ?, ?, ?)"
_INSERT_DESCRIBED = "INSERT OR REPLACE INTO described VALUES (?, ?)"
_INSERT_MARK = "INSERT OR REPLACE INTO projects VALUES (?, ?, ?, ?, ?, ?)"
_BATCH = 500  # keys per SELECT ... IN (...): under every SQLite's limit on parameters

# json.dumps(doc, sort_keys=True), with the encoder made once (dumps makes one per call
# when given options)
record_text = json.JSONEncoder(sort_keys=True).encode


class FileStamp(NamedTuple):
    """What says a file is unchanged since it was read."""

    size: int
    mtime_ns: int
    ino: int
    ctime_ns: int

    @classmethod
    def of(cls, stat: os.stat_result) -> FileStamp:
        return cls(stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_ctime_ns)


_Pending = tuple[str, int, int, int, int, str, bytes]  # a wheels row, as INSERTed
_Row = tuple[FileStamp, str, bytes]  # a wheel's stamp, sha256 and METADATA


class ProjectMark(NamedTuple):
    """What a project of the site was last rendered from, and its manifest as that run left
    it (see :mod:`cuship.index._unchanged`)."""

    inputs: str
    manifest: FileStamp


class CacheDelta(NamedTuple):
    """What a cache learnt since it was copied (into a forked child), to be added to the
    original's: rows to write, describe records to write, and the lookups' counts; or, from
    :meth:`ScanCache.store_shared`, the paths whose rows (and the records) it wrote into the
    cache's file itself."""

    rows: tuple[_Pending, ...]
    described: tuple[tuple[str, str], ...]
    hits: int
    misses: int
    stored: tuple[str, ...] = ()


@frozen
class CacheEntry:
    """What the cache remembers about one wheel file."""

    sha256: str
    metadata: bytes


class ScanCache:
    """Wheel hashes and METADATA in SQLite; ``ScanCache(None)`` keeps them in memory."""

    def __init__(self, path: Path | None, *, preload: bool = True) -> None:
        """``preload``: read every row up front (a run that scans the whole index); without
        it a row is read when asked for, or a batch of them (:meth:`prefetch`): an update,
        which makes few wheels from the cache."""
        self.path = path
        self.preloaded = preload
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = _open(path)
        except sqlite3.DatabaseError:
            # A corrupt cache is only a slower run: start afresh.
            if path is None:
                raise
            _fs.remove_file(path.parent, path.name)
            self._db = _open(path)
        # One query up front: a per-wheel SELECT costs more than the rows themselves.
        self._rows: dict[str, _Row] = {
            row[0]: (FileStamp(*row[1:5]), row[5], bytes(row[6]))
            for row in (self._db.execute(f"SELECT {_COLUMNS} FROM wheels") if preload else ())
        }
        self._absent: set[str] = set()  # asked for, and not in the file (not preloaded)
        self._pending: dict[str, _Pending] = {}
        self._described: dict[str, str] = (
            dict(self._db.execute("SELECT key, doc FROM described")) if preload else {}
        )
        self._described_pending: list[tuple[str, str]] = []
        # Paths whose rows a copy of this cache stored in SQLite itself (absorb), not in _rows
        self._stored: set[str] = set()
        self._marks: dict[str, ProjectMark | None] = {}  # to write: None deletes
        self._forget_marks = False  # on flush, forget the marks stored before
        self.hits = 0
        self.misses = 0

    def knows_nothing(self) -> bool:
        """Whether this cache holds no row (read whole, and empty: a first run)."""
        return self.preloaded and not self._rows and not self._stored

    def missed(self, count: int) -> None:
        """Count ``count`` files read without asking (:meth:`knows_nothing` said to)."""
        self.misses += count

    def counted(self, count: int) -> None:
        """Count ``count`` files known unchanged without asking (see
        :mod:`cuship.index._unchanged`) as hits."""
        self.hits += count

    def get(self, path: str, stamp: FileStamp) -> CacheEntry | None:
        """The entry for ``path`` when its stamp still matches, else None."""
        return self.entry(path) if self.known(path, stamp) else None

    def known(self, path: str, stamp: FileStamp) -> bool:
        """Whether the cache holds ``path`` with this stamp (counted as a hit, else a miss)."""
        row = self._row(path)
        if row is None or row[0] != stamp:
            self.misses += 1
            return False
        self.hits += 1
        return True

    def entry(self, path: str) -> CacheEntry:
        """The entry of ``path``, which the cache holds (:meth:`known` said so)."""
        row = self._row(path)
        assert row is not None, path
        return CacheEntry(sha256=row[1], metadata=row[2])

    def prefetch(self, paths: Sequence[str]) -> None:
        """Read the rows of ``paths`` not read yet, a batch of keys per query (a query per
        wheel costs more than its row): a cache not preloaded, before it is asked for many."""
        if self.preloaded:
            return
        missing = sorted({p for p in paths if p not in self._rows and p not in self._absent})
        for start in range(0, len(missing), _BATCH):
            batch = missing[start : start + _BATCH]
            marks = ",".join("?" * len(batch))
            query = f"SELECT {_COLUMNS} FROM wheels WHERE path IN ({marks})"
            for row in self._db.execute(query, batch):
                self._rows[row[0]] = (FileStamp(*row[1:5]), row[5], bytes(row[6]))
            self._absent.update(p for p in batch if p not in self._rows)

    def _row(self, path: str) -> _Row | None:
        if path in self._rows or (self.preloaded and path not in self._stored):
            return self._rows.get(path)
        if path in self._absent:
            return None
        self._stored.discard(path)
        found = self._db.execute(
            f"SELECT {_COLUMNS} FROM wheels WHERE path = ?", (path,)
        ).fetchone()
        if found is None:
            self._absent.add(path)
            return None
        row = (FileStamp(*found[1:5]), found[5], bytes(found[6]))
        self._rows[path] = row
        return row

    def forget_others(self, paths: set[str], describer: str | None) -> None:
        """Forget every path not in ``paths`` and, given ``describer`` (the key of its records
        less the sha256), every describe record but its records of those paths' wheels: what
        :meth:`retain` and :meth:`retain_described` do, for a cache not preloaded (reading
        each row's path and sha256, not the rows)."""
        held = self._db.execute("SELECT path, sha256 FROM wheels").fetchall()
        hashes = {sha for path, sha in held if path in paths}
        hashes.update(row[1] for path, row in self._rows.items() if path in paths)
        stale = [(path,) for path, _ in held if path not in paths]
        for (path,) in stale:
            self._rows.pop(path, None)
        gone: list[tuple[str]] = []
        if describer is not None:
            kept = {describer + sha for sha in hashes}
            gone = [(k,) for (k,) in self._db.execute("SELECT key FROM described") if k not in kept]
        with self._transaction():
            self._db.executemany("DELETE FROM wheels WHERE path = ?", stale)
            self._db.executemany("DELETE FROM described WHERE key = ?", gone)

    def marks(self) -> dict[str, ProjectMark]:
        """What each project of the site was last rendered from (see :meth:`mark`)."""
        query = self._db.execute("SELECT name, inputs, size, mtime_ns, ino, ctime_ns FROM projects")
        return {row[0]: ProjectMark(row[1], FileStamp(*row[2:6])) for row in query}

    def mark(self, marks: Mapping[str, ProjectMark | None], *, replace: bool = False) -> None:
        """Record what these projects were rendered from (None: forget the project); written
        on :meth:`flush`. Called once a run has finished: a run stopped earlier records
        nothing, and the next one compares those projects again. ``replace``: forget every
        other project's mark (a site rendered whole)."""
        if replace:
            self._forget_marks = True
            self._marks.clear()
        self._marks.update(marks)

    def put(self, path: str, stamp: FileStamp, entry: CacheEntry) -> None:
        """Remember ``entry`` for ``path``; written on :meth:`flush`."""
        self._rows[path] = (stamp, entry.sha256, entry.metadata)
        self._pending[path] = (path, *stamp, entry.sha256, entry.metadata)

    def settle(self, path: str, stamp: FileStamp) -> None:
        """Record ``stamp`` as ``path``'s, when only its ctime moved since it was read.

        Called after the site is written: linking the wheel into the site (and unlinking the
        previous site's copy) changed the ctime, not the file.
        """
        row = self._row(path)
        if row is None or row[0] == stamp or row[0][:3] != stamp[:3]:
            return
        self.put(path, stamp, CacheEntry(sha256=row[1], metadata=row[2]))

    def take_delta(self) -> CacheDelta:
        """What this cache has not written yet, and its counts, handed over and cleared here:
        a forked child's copy hands its work to the parent's cache (:meth:`absorb`)."""
        delta = CacheDelta(
            tuple(self._pending.values()), tuple(self._described_pending), self.hits, self.misses
        )
        self._pending.clear()
        self._described_pending.clear()
        self.hits = self.misses = 0
        return delta

    def store_shared(self) -> CacheDelta:
        """:meth:`take_delta`, its rows and records written into this cache's file through a
        connection of this process's own, while the process this cache was copied from may be
        writing its own (SQLite takes the two in turn): a forked child's, which must not use
        the connection it inherited. The parent's :meth:`absorb` then has nothing to copy (a
        part file merged there took 13 ms of a 5,000-wheel index, after every share). A cache
        in memory hands its rows over instead."""
        if self.path is None:
            return self.take_delta()
        db = sqlite3.connect(str(self.path), isolation_level=None, timeout=_WAIT_S)
        try:
            db.execute("PRAGMA synchronous=OFF")
            db.execute("BEGIN IMMEDIATE")
            self._write_pending(db)
            db.execute("COMMIT")
        finally:
            db.close()
        stored = tuple(self._pending)
        return self.take_delta()._replace(rows=(), described=(), stored=stored)

    def absorb(self, delta: CacheDelta) -> None:
        """Take in what a copy of this cache learnt (:meth:`take_delta`); written on flush.
        Rows the copy stored itself (:meth:`store_shared`) are read back from the file when
        asked for: what this process held of them is older."""
        for path in delta.stored:
            self._rows.pop(path, None)
            self._pending.pop(path, None)
        self._stored.update(delta.stored)
        for row in delta.rows:
            self._rows[row[0]] = (FileStamp(*row[1:5]), row[5], row[6])
            self._pending[row[0]] = row
        for key, text in delta.described:
            self._described[key] = text
        self._described_pending.extend(delta.described)
        self.hits += delta.hits
        self.misses += delta.misses

    def described(self, key: str) -> dict[str, object] | None:
        """The describe record stored under ``key`` (describer + sha256), if any."""
        doc = self._described.get(key)
        if doc is None and not self.preloaded:
            found = self._db.execute("SELECT doc FROM described WHERE key = ?", (key,)).fetchone()
            doc = None if found is None else str(found[0])
        return None if doc is None else dict(json.loads(doc))

    def remember(self, key: str, doc: object, *, text: str | None = None) -> None:
        """Store a describe record (JSON-serialisable); written on :meth:`flush`. ``text``:
        :func:`record_text` of ``doc``, when the caller has it (records repeat)."""
        if text is None:
            text = record_text(doc)
        self._described[key] = text
        self._described_pending.append((key, text))

    def retain_described(self, keys: set[str]) -> None:
        """Forget describe records not in ``keys`` (wheels no longer indexed, older describers)."""
        assert self.preloaded, "retain needs every row"
        stale = [(k,) for k in self._described if k not in keys]
        for (k,) in stale:
            del self._described[k]
        with self._transaction():
            self._db.executemany("DELETE FROM described WHERE key = ?", stale)

    def retain(self, paths: set[str]) -> None:
        """Forget every path not in ``paths`` (wheels no longer indexed)."""
        assert self.preloaded, "retain needs every row"
        stale = [(p,) for p in self._rows if p not in paths]
        for (p,) in stale:
            del self._rows[p]
            self._pending.pop(p, None)
        with self._transaction():
            self._db.executemany("DELETE FROM wheels WHERE path = ?", stale)

    def flush(self) -> None:
        """Write pending entries in one transaction."""
        if not (self._pending or self._described_pending or self._marks or self._forget_marks):
            return
        with self._transaction():
            self._write_pending(self._db)
            if self._forget_marks:
                self._db.execute("DELETE FROM projects")
            gone = sorted((name,) for name, mark in self._marks.items() if mark is None)
            self._db.executemany("DELETE FROM projects WHERE name = ?", gone)
            self._db.executemany(
                _INSERT_MARK,
                sorted((n, m.inputs, *m.manifest) for n, m in self._marks.items() if m),
            )
        self._pending.clear()
        self._described_pending.clear()
        self._marks.clear()
        self._forget_marks = False

    def _write_pending(self, db: sqlite3.Connection) -> None:
        """The pending rows and describe records, into ``db`` in key order: a B-tree takes
        keys in order faster."""
        db.executemany(_INSERT_ROW, sorted(self._pending.values()))
        db.executemany(_INSERT_DESCRIBED, sorted(dict(self._described_pending).items()))

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def close(self) -> None:
        self.flush()
        self._db.close()

    def __enter__(self) -> ScanCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _open(path: Path | None) -> sqlite3.Connection:
    """The cache at ``path`` (in memory for None), made or emptied to this version's schema.

    A rollback journal: the cache is updated in place, and a run killed mid-commit leaves the
    last committed state. Never synced (synchronous=OFF, set first, so that making the schema
    syncs nothing either: a new cache's schema took a dozen syncs of the file, its journal and
    their folder, 5 to 60 ms of a cold index's start): a power cut may lose the cache, which
    costs only a slower next run."""
    where = ":memory:" if path is None else str(path)
    db = sqlite3.connect(where, isolation_level=None, timeout=_WAIT_S)
    try:
        db.execute("PRAGMA synchronous=OFF")
        db.execute("PRAGMA journal_mode=DELETE")
        db.execute("BEGIN")
        (version,) = db.execute("PRAGMA user_version").fetchone()
        if version != _VERSION:
            db.execute("DROP TABLE IF EXISTS wheels")
            db.execute("DROP TABLE IF EXISTS described")
            db.execute("DROP TABLE IF EXISTS projects")
            db.execute(f"PRAGMA user_version = {_VERSION}")
        for statement in _SCHEMA:
            db.execute(statement)
        db.execute("COMMIT")
    except BaseException:
        db.close()
        raise
    return db
