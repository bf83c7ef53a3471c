"""The scan cache: a wheel's sha256 and METADATA, keyed by (path, size, mtime_ns), and what
``describe`` said of it, keyed by (describer, sha256).

One SQLite file. A wheel whose path, size and modification time are unchanged is not read again,
so adding one wheel to an index of thousands hashes one file, reads one METADATA and inspects one
wheel's extensions.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

__all__ = ["CacheEntry", "ScanCache"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS wheels (
    path TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    metadata BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS described (
    key TEXT PRIMARY KEY,
    doc TEXT NOT NULL
)
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheEntry:
    """What the cache remembers about one wheel file."""

    sha256: str
    metadata: bytes


class ScanCache:
    """Wheel hashes and METADATA in SQLite; ``ScanCache(None)`` keeps them in memory."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        target = ":memory:" if path is None else str(path)
        try:
            self._db = sqlite3.connect(target, isolation_level=None)
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError:
            # A corrupt cache is only a slower run: start afresh.
            if path is None:
                raise
            path.unlink(missing_ok=True)
            self._db = sqlite3.connect(target, isolation_level=None)
            self._db.executescript(_SCHEMA)
        self._db.execute("PRAGMA journal_mode=OFF")
        self._db.execute("PRAGMA synchronous=OFF")
        # One query up front: a per-wheel SELECT costs more than the rows themselves.
        self._rows: dict[str, tuple[int, int, str, bytes]] = {
            row[0]: (row[1], row[2], row[3], bytes(row[4]))
            for row in self._db.execute("SELECT path, size, mtime_ns, sha256, metadata FROM wheels")
        }
        self._pending: list[tuple[str, int, int, str, bytes]] = []
        self._described: dict[str, str] = dict(self._db.execute("SELECT key, doc FROM described"))
        self._described_pending: list[tuple[str, str]] = []
        self.hits = 0
        self.misses = 0

    def get(self, path: str, size: int, mtime_ns: int) -> CacheEntry | None:
        """The entry for ``path`` when its size and mtime still match, else None."""
        row = self._rows.get(path)
        if row is None or row[0] != size or row[1] != mtime_ns:
            self.misses += 1
            return None
        self.hits += 1
        return CacheEntry(sha256=row[2], metadata=row[3])

    def put(self, path: str, size: int, mtime_ns: int, entry: CacheEntry) -> None:
        """Remember ``entry`` for ``path``; written on :meth:`flush`."""
        self._rows[path] = (size, mtime_ns, entry.sha256, entry.metadata)
        self._pending.append((path, size, mtime_ns, entry.sha256, entry.metadata))

    def described(self, key: str) -> dict[str, object] | None:
        """The describe record stored under ``key`` (describer + sha256), if any."""
        doc = self._described.get(key)
        return None if doc is None else dict(json.loads(doc))

    def remember(self, key: str, doc: object) -> None:
        """Store a describe record (JSON-serialisable); written on :meth:`flush`."""
        text = json.dumps(doc, sort_keys=True)
        self._described[key] = text
        self._described_pending.append((key, text))

    def retain_described(self, keys: set[str]) -> None:
        """Forget describe records not in ``keys`` (wheels no longer indexed, older describers)."""
        stale = [(k,) for k in self._described if k not in keys]
        for (k,) in stale:
            del self._described[k]
        with self._transaction():
            self._db.executemany("DELETE FROM described WHERE key = ?", stale)

    def retain(self, paths: set[str]) -> None:
        """Forget every path not in ``paths`` (wheels no longer indexed)."""
        stale = [(p,) for p in self._rows if p not in paths]
        for (p,) in stale:
            del self._rows[p]
        with self._transaction():
            self._db.executemany("DELETE FROM wheels WHERE path = ?", stale)

    def flush(self) -> None:
        """Write pending entries in one transaction."""
        if not self._pending and not self._described_pending:
            return
        with self._transaction():
            self._db.executemany(
                "INSERT OR REPLACE INTO wheels VALUES (?, ?, ?, ?, ?)", self._pending
            )
            self._db.executemany(
                "INSERT OR REPLACE INTO described VALUES (?, ?)", self._described_pending
            )
        self._pending.clear()
        self._described_pending.clear()

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
