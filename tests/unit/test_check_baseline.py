"""Baselines: round trip through JSON, the regression rules, unreadable files."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from cuship import __version__
from cuship.check.declare.inputs import CaseSpec
from cuship.check.report.baseline import from_report, load, regressions, require_comparable, save
from cuship.check.report.results import CaseResult, CheckReport, GroupResult
from cuship.errors import InputError, UsageError


def _report(max_abs: float, status: str = "passed", max_rel: float | None = None) -> CheckReport:
    case = CaseResult(
        case=CaseSpec(index=0, sizes=(("n", 3),), distribution="normal", seed=1),
        status=status,  # type: ignore[arg-type]
        total=3,
        max_abs=max_abs,
        max_rel=max_abs if max_rel is None else max_rel,
    )
    groups = (
        GroupResult(
            op="saxpy", engine="native", dtype="float32", rtol=1e-6, atol=1e-5, cases=(case,)
        ),
        GroupResult(
            op="saxpy", engine="cuda", dtype="float32", rtol=1e-6, atol=1e-5, skip_reason="no GPU"
        ),
    )
    return CheckReport(
        target=".", device="cpu", seed=3, quick=True, started=0.0, finished=1.0, groups=groups
    )


def test_round_trip_keeps_versions_and_figures(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "baseline.json"
    save(from_report(_report(2e-7)), path)
    raw = json.loads(path.read_text())
    assert raw["format"] == 1 and raw["cuship_version"] == __version__
    assert list(raw["entries"]) == ["saxpy/native/float32"]  # skipped groups have no figures
    loaded = load(path)
    assert loaded.entries["saxpy/native/float32"].max_abs == 2e-7
    assert loaded.seed == 3 and loaded.quick


def test_infinite_errors_survive_json(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    save(from_report(_report(float("inf"), "failed")), path)
    assert load(path).entries["saxpy/native/float32"].max_abs == float("inf")


def test_worse_than_threshold_is_a_regression() -> None:
    base = from_report(_report(1e-6))
    assert regressions(_report(1.05e-6), base, 0.1) == ()
    (found,) = regressions(_report(1.2e-6), base, 0.1)
    assert found.key == "saxpy/native/float32"
    assert "baseline 1e-06" in found.message
    assert regressions(_report(1.2e-6), base, 0.5) == ()


def test_exact_baseline_tolerates_only_float_noise() -> None:
    base = from_report(_report(0.0))
    assert regressions(_report(1e-13), base, 0.1) == ()
    assert len(regressions(_report(1e-9), base, 0.1)) == 1


def test_passed_before_failed_now_is_a_regression() -> None:
    base = from_report(_report(1e-6))
    (found,) = regressions(_report(1e-6, "failed"), base, 0.1)
    assert "passed in the baseline" in found.message
    report = replace(_report(1e-6, "failed"), regressions=(found,), gate_regressions=False)
    assert report.exit_code == 1  # failing is failing, gate or not


def test_new_groups_are_not_regressions() -> None:
    base = replace(from_report(_report(1e-6)), entries={})
    assert regressions(_report(1.0), base, 0.1) == ()


def test_unreadable_baselines_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read"):
        load(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(InputError, match="not JSON"):
        load(tmp_path / "bad.json")
    (tmp_path / "old.json").write_text('{"format": 99}')
    with pytest.raises(InputError, match="format 99"):
        load(tmp_path / "old.json")


def test_relative_error_drift_inside_the_abs_threshold_is_a_regression() -> None:
    # an epsilon moved outside the square root: max abs error barely moves, max rel error x24
    base = from_report(_report(1e-6, max_rel=2e-7))
    (found,) = regressions(_report(1.05e-6, max_rel=4.8e-6), base, 0.1, 2.0)
    assert found.message == "max rel error 4.8e-06 > baseline 2e-07 x 2"
    assert regressions(_report(1.05e-6, max_rel=3.9e-7), base, 0.1, 2.0) == ()
    assert regressions(_report(1.05e-6, max_rel=4.8e-6), base, 0.1, 30.0) == ()


def test_a_baseline_of_other_cases_is_refused_with_the_way_out(tmp_path: Path) -> None:
    path = tmp_path / "thorough.json"
    thorough = from_report(replace(_report(1e-6), quick=False))
    require_comparable(thorough, path, quick=False, seed=3)
    with pytest.raises(
        UsageError, match="holds a thorough run with seed 3; this run is quick"
    ) as err:
        require_comparable(thorough, path, quick=True, seed=3)
    assert "--quick --seed 3 --save-baseline" in (err.value.hint or "")
    with pytest.raises(UsageError, match="this run is thorough with seed 4"):
        require_comparable(thorough, path, quick=False, seed=4)
