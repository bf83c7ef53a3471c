"""What ``cuship bench``'s options may ask together, the defaults one takes from another, the
files ``--export`` writes and the line a run ends with: decided by the library, not the CLI."""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from cuship.bench.gate import unasserted_text
from cuship.bench.request import DEFAULT_OUTPUT, BenchFlags, bench_request
from cuship.bench.results import FloorCheck, PointResult, export, to_json
from cuship.bench.stats import Comparison
from cuship.bench.timers.measure import Measurement
from cuship.errors import UsageError
from tests.bench_reports import report_of

HERE = Path("proj")


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"interleave": True}, "--interleave needs --compare-with PATH2"),
        ({"seeds": 5}, "--seeds and --repeats go together"),
        ({"repeats": 50}, "--seeds and --repeats go together"),
        ({"ncu_set": "full"}, "--ncu-set needs --profile ncu"),
        ({"ncu_reports": Path("r")}, "--ncu-reports needs --profile ncu"),
        ({"profile": "ncu", "burn_in": True}, "--profile profiles timed runs, not --burn-in"),
    ],
)
def test_options_that_make_no_sense_together_are_a_usage_error(
    options: dict[str, Any], said: str
) -> None:
    with pytest.raises(UsageError, match=said) as caught:
        bench_request(HERE, BenchFlags(**options))
    assert caught.value.hint


def test_the_options_that_go_together_make_a_request() -> None:
    flags = BenchFlags(
        interleave=True, compare_with=Path("other"), seeds=5, repeats=50, cases=["a"]
    )
    request = bench_request(HERE, flags)
    assert (request.compare_with, request.seeds, request.repeats) == (Path("other"), 5, 50)
    assert request.cases == ("a",) and request.store


def test_the_full_ncu_set_keeps_its_reports_under_the_output_directory() -> None:
    assert (
        bench_request(HERE, BenchFlags(profile="ncu", ncu_set="full")).ncu_reports
        == DEFAULT_OUTPUT / "ncu"
    )
    full = bench_request(HERE, BenchFlags(profile="ncu", ncu_set="full", output=Path("o")))
    assert full.ncu_reports == Path("o/ncu")
    kept = bench_request(HERE, BenchFlags(profile="ncu", ncu_set="full", ncu_reports=Path("k")))
    assert kept.ncu_reports == Path("k")
    basic = bench_request(HERE, BenchFlags(profile="ncu"))
    assert (basic.ncu_set, basic.ncu_reports) == ("basic", None)


def test_flags_left_out_leave_the_config_its_say() -> None:
    assert bench_request(HERE).drop_throttled is None  # [bench] drop_throttled decides
    assert bench_request(HERE, BenchFlags(drop_throttled=True)).drop_throttled is True
    assert bench_request(HERE, BenchFlags(no_store=True)).store is False


def _point(key: str, samples: tuple[float, ...] = (1e-4, 2e-4, 3e-4)) -> PointResult:
    m = Measurement(samples=samples, stop_reason="fixed", rel_noise=0.01)
    return PointResult(key=key, case=key, params={"n": 4}, status="ok", measurement=m)


def test_export_writes_the_json_and_the_csv_beside_it(tmp_path: Path) -> None:
    report = report_of(_point("saxpy[n=4]"))
    (only,) = export(report, tmp_path / "a")
    assert only.suffix == ".json" and json.loads(only.read_text()) == to_json(report)
    csv_path, json_path = export(report, tmp_path / "b", csv_too=True)
    assert csv_path == json_path.with_suffix(".csv")
    rows = list(csv.DictReader(csv_path.read_text().splitlines()))
    assert [r["value"] for r in rows] == ["0.0001", "0.0002", "0.0003"]
    assert not list((tmp_path / "b").glob(".*"))  # written atomically: no temporary left


def test_the_summary_line_counts_points_and_names_the_verdict_and_run() -> None:
    slower = Comparison(ratio=1.2, low=1.1, high=1.3, threshold=0.05, verdict="SLOWER")
    missed = FloorCheck(machine="H100", floor=1e12, unit="ops/s", measured=1.0)
    results = (
        dataclasses.replace(_point("a"), comparison=slower, floor=missed),
        _point("b"),
        dataclasses.replace(_point("c"), status="errored", measurement=None, error="boom"),
    )
    report = dataclasses.replace(report_of(*results), baseline="run 3", run_id=7)
    assert report.summary_line() == (
        "3 points: 2 ok, 0 unsure, 1 errored; vs run 3: 1 SLOWER; 1 floors missed; "
        "verdict errored, run 7"
    )


def test_no_floor_for_this_machine_says_how_to_name_one() -> None:
    text = unasserted_text(None)
    assert "no floor names this machine (no GPU: the CPU entry)" in text
    assert 'CPU = "1e10 ops/s"' in text
    assert "no floor names NVIDIA H100 80GB HBM3" in unasserted_text("NVIDIA H100 80GB HBM3")
