"""Readers of the results store (`report`, `bench history`, `dashboard`) on stores that are not
theirs or are damaged (issue 34, item 5): the file is opened read-only and never changed (no
tables made, no switch to WAL), and a damaged store is exit 2 naming the file and what is wrong,
never exit 70."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from cuship.cli import main
from cuship.store import ResultRow, RunRecord, Store

READERS = {
    "report": lambda store, out: ["report", "--store", str(store)],
    "bench history": lambda store, out: ["bench", "history", "--store", str(store)],
    "dashboard": lambda store, out: ["dashboard", "--store", str(store), "-o", str(out)],
}


def _store(path: Path, payload: str = '{"ok": 1}', **columns: str) -> Path:
    with Store.open(path) as store:
        run = RunRecord(
            kind="bench",
            started=100.0,
            finished=101.0,
            fingerprint={"python": "3.11"},
            cuship_version="0.1.0",
            project="demo",
            verdict="passed",
        )
        run_id = store.record(run, [ResultRow(key="k", status="passed", payload={})])
        store.connection.execute(
            "UPDATE results SET payload = ? WHERE run_id = ?", (payload, run_id)
        )
        for column, value in columns.items():
            store.connection.execute(f"UPDATE runs SET {column} = ?", (value,))
    return path


def _run(reader: str, store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    code = main(READERS[reader](store, tmp_path / "out"))
    captured = capsys.readouterr()
    said = captured.out + captured.err
    assert code == 2, said
    assert "Traceback" not in said and "internal error" not in said
    assert str(store) in said
    return said


@pytest.mark.parametrize("reader", READERS)
def test_another_apps_database_is_refused_and_left_as_it_is(
    reader: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other_app.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('mine')")
    conn.close()
    before = other.read_bytes()
    said = _run(reader, other, tmp_path, capsys)
    assert "is not a cuship results store: it has no 'results' or 'runs' table" in said
    assert other.read_bytes() == before  # no tables added, still in rollback-journal mode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other_app.sqlite"]  # no -wal, -shm


@pytest.mark.parametrize("reader", READERS)
def test_flipped_bytes_name_the_file(
    reader: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _store(tmp_path / "results.db")
    data = bytearray(store.read_bytes())
    data[0:16] = b"not sqlite at al"  # the header, as a flipped disk block would leave it
    store.write_bytes(bytes(data))
    said = _run(reader, store, tmp_path, capsys)
    assert "not an SQLite database, or a damaged one" in said


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ("}{", "'payload' is not JSON cuship reads"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"x": "' + "a" * (20 << 20) + '"}', "'payload' is 20 MiB, more than the 8 MiB read"),
        ("[1, 2]", "'payload' is not a JSON object"),
    ],
    ids=["braces", "nested", "20MB", "list"],
)
@pytest.mark.parametrize("reader", READERS)
def test_a_damaged_payload_is_exit_2_saying_what(
    reader: str, payload: str, problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _store(tmp_path / "results.db", payload=payload)
    said = _run(reader, store, tmp_path, capsys)
    assert "is damaged: run 1, result 'k'" in said and problem in said


def test_a_damaged_run_row_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = _store(tmp_path / "results.db", meta="}{")
    said = _run("report", store, tmp_path, capsys)
    assert "is damaged: run 1: 'meta' is not JSON cuship reads" in said
