"""The results store: runs and results written atomically and read back by time and kind."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from cuship.errors import InputError
from cuship.store import ResultRow, RunRecord, Store


def _run(kind: str = "check", started: float = 100.0, verdict: str = "passed") -> RunRecord:
    return RunRecord(
        kind=kind,  # type: ignore[arg-type]
        started=started,
        finished=started + 1,
        fingerprint={"python": "3.11", "gpus": []},
        cuship_version="0.1.0",
        project="demo",
        verdict=verdict,
        meta={"seed": 3},
    )


def test_record_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / ".cuship" / "results.db"
    rows = [
        ResultRow(key="saxpy/native/float32", status="passed", payload={"cases": [1, 2]},
                  numbers={"max_abs": 1e-7, "max_rel": float("inf")}),
        ResultRow(key="softmax/native/float32", status="failed", payload={}),
    ]  # fmt: skip
    with Store.open(path) as store:
        run_id = store.record(_run(), rows)
        (run,) = store.runs()
        assert run.id == run_id and run.meta == {"seed": 3} and run.fingerprint["python"] == "3.11"
        got = store.results(run_id)
    assert [r.key for r in got] == [r.key for r in rows]
    assert got[0].numbers == {"max_abs": 1e-7}  # non-finite numbers stay in the payload only
    assert got[0].payload == {"cases": [1, 2]}


def test_wal_mode_and_filters(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    with Store.open(path) as store:
        store.record(_run("check", 100.0), [])
        store.record(_run("bench", 200.0), [])
        store.record(_run("check", 300.0, "failed"), [])
        assert [r.started for r in store.runs(kind="check")] == [100.0, 300.0]
        assert [r.kind for r in store.runs(since=150.0)] == ["bench", "check"]
        mode = store.connection.execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_kind_is_constrained(tmp_path: Path) -> None:
    with Store.open(tmp_path / "r.db") as store, pytest.raises(sqlite3.IntegrityError):
        store.record(_run("lint"), [])


def test_failed_write_leaves_nothing_behind(tmp_path: Path) -> None:
    duplicate = [
        ResultRow(key="k", status=None, payload={}),
        ResultRow(key="k", status=None, payload={}),
    ]
    with Store.open(tmp_path / "r.db") as store:
        with pytest.raises(sqlite3.IntegrityError):
            store.record(_run(), duplicate)
        assert store.runs() == ()


def test_unusable_path_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="results store"):
        Store.open(tmp_path / "file" / "results.db")


def test_bench_commands_read_the_bench_store_and_report_the_check_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cuship.store.read import store_for as _store_path

    monkeypatch.delenv("CUSHIP_STORE", raising=False)
    (tmp_path / "cuship.toml").write_text(
        '[project]\nname = "p"\n[check]\nstore = "c.db"\n[bench]\nstore = "b.db"\n'
    )
    root = tmp_path.resolve()
    assert _store_path(tmp_path, None, "bench") == root / "b.db"
    assert _store_path(tmp_path, None) == root / "c.db"
    monkeypatch.setenv("CUSHIP_STORE", str(tmp_path / "env.db"))
    assert _store_path(tmp_path, None, "bench") == tmp_path / "env.db"
    assert _store_path(tmp_path, tmp_path / "given.db", "bench") == tmp_path / "given.db"


def test_a_broken_config_is_an_error_not_the_default_store(tmp_path: Path) -> None:
    from cuship.errors import ConfigError
    from cuship.store.read import store_for

    (tmp_path / "cuship.toml").write_text('[project]\nname = "p"\n[check]\nstroe = "c.db"\n')
    with pytest.raises(ConfigError, match="stroe"):
        store_for(tmp_path, None)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert store_for(empty, None, environ={}) == empty / ".cuship" / "results.db"
