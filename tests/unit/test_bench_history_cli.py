"""``cuship bench history`` as a user runs it: table, JSON, filters, exit 4 on an empty store."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest

from cuship.cli._common import run_cli
from cuship.cli.bench_history import command
from cuship.store import RunRecord, Store
from tests.bench_factory import synthetic_runs, write_store


def _bench(argv: list[str]) -> int:
    """Run the command the way the ``cuship bench`` group will: ``bench history ...``."""
    group = click.Group("bench")
    group.add_command(command)
    return run_cli(group, ["history", *argv])


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return write_store(tmp_path / "results.db", synthetic_runs(30, step_at=12, factor=1.1, seed=1))


def test_json_names_the_first_run_after_the_step(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _bench(["--store", str(store), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["store"] == str(store)
    assert [s["key"] for s in document["series"]] == ["vecadd[n=1024]", "vecadd[n=1048576]"]
    for series in document["series"]:
        assert series["machine_id"] == "a1b2c3d4e5f6"
        assert len(series["runs"]) == 30
        (step,) = series["steps"]
        assert step["index"] == 12
        assert step["first_run_after"] == series["runs"][12] == 13  # store ids start at 1
        assert step["direction"] == "slower"
        assert step["label"] == "v0.12"
        assert 0.08 < step["rel_change"] < 0.12
        assert step["p_value"] < 0.01


def test_table_lists_steps_per_case_and_machine(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _bench(["--store", str(store), "--case", "vec*"]) == 0
    captured = capsys.readouterr()
    assert "vecadd[n=1024]" in captured.out
    assert "a1b2c3d4e5f6" in captured.out
    assert "from run 13 (v0.12)" in captured.out
    assert "slower" in captured.out
    assert "2 steps in 2 series" in captured.err


def test_filters_that_match_nothing_exit_4(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _bench(["--store", str(store), "--machine", "0000"]) == 4
    assert "'0000'" in capsys.readouterr().err


def test_missing_store_exits_4_and_says_where_it_looked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere.db"
    assert _bench(["--store", str(missing)]) == 4
    assert str(missing) in capsys.readouterr().err


def test_store_without_bench_runs_exits_4(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "results.db"
    check = RunRecord(
        kind="check",
        started=1.0,
        finished=2.0,
        fingerprint={},
        cuship_version="0.1.0",
        project="p",
        verdict="ok",
    )
    with Store.open(path) as db:
        db.record(check, [])
    assert _bench(["--store", str(path)]) == 4
    err = capsys.readouterr().err
    assert "holds no bench runs" in err
    assert str(path) in err
