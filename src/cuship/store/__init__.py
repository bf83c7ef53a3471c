"""The results store of cuship: one SQLite file holding every ``check`` and ``bench`` run.

WAL mode and a busy timeout make it safe for several processes writing at once (CI shards, a
parallel check and a bench side by side); each run is written in one ``BEGIN IMMEDIATE``
transaction. Tables: ``runs`` (one row per run) and ``results`` (one row per result key of a
run: a JSON payload and named numbers).
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from cuship import _read, settings
from cuship._format import size_text
from cuship.errors import InputError

__all__ = ["DEFAULT_PATH", "ResultRow", "RunRecord", "Store", "store_path"]

DEFAULT_PATH = Path(".cuship") / "results.db"
SCHEMA_VERSION = 1
RunKind = Literal["check", "bench"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL CHECK (kind IN ('check', 'bench')),
    started REAL NOT NULL,
    finished REAL,
    fingerprint TEXT NOT NULL,
    cuship_version TEXT NOT NULL,
    project TEXT NOT NULL,
    verdict TEXT,
    meta TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS runs_by_time ON runs (kind, started);
CREATE TABLE IF NOT EXISTS results (
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    status TEXT,
    payload TEXT NOT NULL,
    numbers TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (run_id, key)
);
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class ResultRow:
    key: str
    status: str | None
    payload: Mapping[str, Any]
    numbers: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRecord:
    kind: RunKind
    started: float
    finished: float | None
    fingerprint: Mapping[str, Any]
    cuship_version: str
    project: str
    verdict: str | None
    meta: Mapping[str, Any] = field(default_factory=dict)
    id: int | None = None


def store_path(root: Path, configured: str | Path, environ: Mapping[str, str]) -> Path:
    """The results store: ``CUSHIP_STORE``, else the configured path under the project ``root``."""
    override = environ.get(settings.STORE)
    return Path(override) if override else root / configured


def _finite(numbers: Mapping[str, float]) -> dict[str, float]:
    """JSON has no inf/NaN; those stay in the payload only."""
    return {k: float(v) for k, v in numbers.items() if math.isfinite(v)}


def _read_only_uri(path: Path) -> str:
    """The URI that reads the store at ``path`` and writes nothing beside it. With no ``-wal``
    file every committed row is in the file itself, and ``immutable`` reads it with no lock
    and no ``-shm``/``-wal`` made (``mode=ro`` alone makes both for a WAL store in a
    writable folder); with one, a writer may be at work and its rows are in the WAL, which
    only a shared-memory reader sees."""
    uri = path.absolute().as_uri()
    wal = path.with_name(path.name + "-wal")
    return f"{uri}?mode=ro" if wal.exists() else f"{uri}?mode=ro&immutable=1"


class Store:
    """An open results store. Use as a context manager: ``with Store.open(path) as store: ...``."""

    def __init__(self, connection: sqlite3.Connection, path: Path, *, read_only: bool = False):
        self.connection = connection
        self.path = path
        self.read_only = read_only

    @classmethod
    def open(cls, path: Path, *, busy_timeout_s: float = 60.0) -> Store:
        """Open (creating if needed) the store at ``path``."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(path, timeout=busy_timeout_s, isolation_level=None)
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            _retry_locked(lambda: _set_up(conn), busy_timeout_s)
        except (sqlite3.DatabaseError, OSError) as err:
            raise InputError(
                f"cannot open the results store {str(path)!r}: {err}",
                hint="set CUSHIP_STORE or [check] store to a writable SQLite file",
            ) from err
        return cls(conn, path)

    @classmethod
    def open_read(cls, path: Path) -> Store:
        """Open the store at ``path`` to read it only (:func:`_read_only_uri`): nothing created,
        no switch to WAL, so a file cuship did not create (``--store other_app.sqlite``) is
        never changed. A file that is not a results store, or is damaged, is an
        :class:`InputError` naming it and what is wrong (its rows are checked as they are read:
        see :meth:`runs` and :meth:`results`)."""
        try:
            _read.stated(path, _read.STORE)  # a regular file: a FIFO is refused, never opened
        except FileNotFoundError as err:
            raise InputError(f"there is no results store at {str(path)!r}") from err
        try:
            conn = sqlite3.connect(_read_only_uri(path), uri=True)
            conn.execute("PRAGMA query_only = ON")
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        except sqlite3.DatabaseError as err:
            raise _damaged(path, err) from err
        missing = sorted({"runs", "results"} - tables)
        if missing:
            conn.close()
            raise InputError(
                f"{str(path)!r} is not a cuship results store: it has no "
                f"{' or '.join(map(repr, missing))} table; left as it is",
                hint="point --store / CUSHIP_STORE at the store `cuship check` or `bench` wrote",
            )
        return cls(conn, path, read_only=True)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.connection.close()

    def record(self, run: RunRecord, results: Sequence[ResultRow]) -> int:
        """Write one run and its results atomically; returns the run id."""
        with _transaction(self.connection) as conn:
            cursor = conn.execute(
                "INSERT INTO runs (kind, started, finished, fingerprint, cuship_version, project,"
                " verdict, meta) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run.kind,
                    run.started,
                    run.finished,
                    json.dumps(run.fingerprint, default=str),
                    run.cuship_version,
                    run.project,
                    run.verdict,
                    json.dumps(run.meta, default=str),
                ),
            )
            run_id = int(cursor.lastrowid or 0)
            conn.executemany(
                "INSERT INTO results (run_id, key, status, payload, numbers) VALUES (?, ?, ?, ?, ?)",
                [
                    (run_id, r.key, r.status, json.dumps(r.payload), json.dumps(_finite(r.numbers)))
                    for r in results
                ],
            )
        return run_id

    def runs(
        self, *, kind: RunKind | None = None, since: float | None = None, project: str | None = None
    ) -> tuple[RunRecord, ...]:
        """Runs, oldest first, filtered by kind, start time (epoch seconds) and project."""
        sql = "SELECT id, kind, started, finished, fingerprint, cuship_version, project, verdict, meta FROM runs WHERE 1=1"
        args: list[Any] = []
        for clause, value in (
            ("kind = ?", kind),
            ("started >= ?", since),
            ("project = ?", project),
        ):
            if value is not None:
                sql += f" AND {clause}"
                args.append(value)
        rows = self._rows(sql + " ORDER BY started, id", args)
        return tuple(self._run(row) for row in rows)

    def _rows(self, sql: str, args: Sequence[Any]) -> list[Any]:
        try:
            return self.connection.execute(sql, args).fetchall()
        except sqlite3.DatabaseError as err:
            raise _damaged(self.path, err) from err

    def _run(self, row: Sequence[Any]) -> RunRecord:
        where = f"run {row[0]!r}"
        kind = row[1]
        if kind not in ("check", "bench") or not _number(row[2]) or not _number(row[3], None):
            raise _bad_row(self.path, where, "its kind or times are not what cuship writes")
        return RunRecord(
            id=row[0],
            kind=kind,
            started=row[2],
            finished=row[3],
            fingerprint=self._json(row[4], where, "fingerprint"),
            cuship_version=str(row[5]),
            project=str(row[6]),
            verdict=None if row[7] is None else str(row[7]),
            meta=self._json(row[8], where, "meta"),
        )

    def _json(self, text: Any, where: str, column: str) -> dict[str, Any]:
        """A JSON object column, checked: text, at most :data:`MAX_FIELD` bytes, JSON of bounded
        depth (:mod:`cuship._json`), an object."""
        if not isinstance(text, str | bytes):
            raise _bad_row(self.path, where, f"{column!r} is not text")
        if len(text) > MAX_FIELD:
            size, limit = size_text(len(text)), size_text(MAX_FIELD)
            raise _bad_row(self.path, where, f"{column!r} is {size}, more than the {limit} read")
        try:
            value = _read.loads(text)
        except ValueError as err:
            raise _bad_row(
                self.path, where, f"{column!r} is not JSON cuship reads ({err})"
            ) from err
        if not isinstance(value, dict):
            raise _bad_row(self.path, where, f"{column!r} is not a JSON object")
        return value

    def results(self, run_id: int) -> tuple[ResultRow, ...]:
        rows = self._rows(
            "SELECT key, status, payload, numbers FROM results WHERE run_id = ? ORDER BY rowid",
            (run_id,),
        )
        out = []
        for r in rows:
            where = f"run {run_id}, result {_read.shown(r[0])}"
            numbers = self._json(r[3], where, "numbers")
            if not all(isinstance(v, int | float) for v in numbers.values()):
                raise _bad_row(self.path, where, "'numbers' holds a value that is no number")
            payload = self._json(r[2], where, "payload")
            status = None if r[1] is None else str(r[1])
            out.append(ResultRow(key=str(r[0]), status=status, payload=payload, numbers=numbers))
        return tuple(out)


MAX_FIELD = 8 << 20
"""The longest JSON column a reader accepts (a result's payload is kilobytes)."""


def _number(value: object, *also: object) -> bool:
    return value in also or (isinstance(value, int | float) and not isinstance(value, bool))


def _damaged(path: Path, err: sqlite3.DatabaseError) -> InputError:
    return InputError(
        f"cannot read the results store {str(path)!r}: {err} (not an SQLite database, or a "
        "damaged one); left as it is",
        hint="point --store / CUSHIP_STORE at the store `cuship check` or `bench` wrote, or "
        "move the damaged file away (a new one is made by the next run)",
    )


def _bad_row(path: Path, where: str, problem: str) -> InputError:
    return InputError(
        f"the results store {str(path)!r} is damaged: {where}: {problem}",
        hint="move the damaged file away (a new one is made by the next run), or delete the run",
    )


def _set_up(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA synchronous = NORMAL")
    with _transaction(conn):
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _retry_locked(step: Callable[[], None], timeout_s: float) -> None:
    """Run ``step``, again while SQLite says the database is locked, for up to ``timeout_s``.

    Writers that open a new store at the same moment race on switching it to WAL; SQLite can
    answer that race with "database is locked" at once, without its busy handler (seen with four
    processes creating one store).
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            step()
            return
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or time.monotonic() >= deadline:
                raise
            time.sleep(0.02)


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
