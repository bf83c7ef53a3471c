"""Every sample is kept: throttled samples (SM clock under 0.9 × max) count in the statistics and
are reported as a share with the median clock; --drop-throttled leaves them out and says how many.

The scripted run mirrors the H100 matmul that showed the problem: 251 of 298 samples throttled
(1700 MHz, 1.62 ms), 47 at full clock (1980 MHz, 1.4876 ms).
"""

from __future__ import annotations

import csv
import io
import statistics
from typing import Any

import pytest
from click.testing import CliRunner

from cuship.bench.gate import TimingBaseline
from cuship.bench.history.changepoints import collect_series
from cuship.bench.results import PointResult, to_csv, to_json
from cuship.bench.session import record
from cuship.bench.timers.measure import Measurement, StopRule, measure, measure_fixed, rel_noise
from cuship.store import ResultRow, Store
from tests.bench_factory import bench_row, bench_run
from tests.bench_reports import ScriptedTimer, report_of

FULL, SLOW = (1.4876e-3, 1980), (1.62e-3, 1700)
SCRIPT = [FULL] * 47 + [SLOW] * 251


def _result(drop: bool) -> PointResult:
    m = measure_fixed(ScriptedTimer(SCRIPT), [lambda: None], repeats=298, drop_throttled=drop)
    work = {"bytes": None, "flops": 2.0 * 8192**3, "ops": None}
    return PointResult(
        key="mm[n=8192]", case="mm", params={"n": 8192}, status="ok", measurement=m, work=work
    )


def test_throttled_samples_are_kept_counted_and_the_median_uses_all() -> None:
    result = _result(drop=False)
    m = result.measurement
    assert m is not None and len(m.throttled) == 251 and m.dropped == 0
    numbers = result.numbers()
    assert numbers["median"] == pytest.approx(1.62e-3)  # the median of all 298 samples
    assert numbers["median"] == pytest.approx(statistics.median(s for s, _ in SCRIPT))
    assert numbers["throttled_fraction"] == pytest.approx(251 / 298)
    assert numbers["sm_clock_median_mhz"] == 1700 and numbers["sm_clock_max_mhz"] == 1980
    assert "dropped_samples" not in numbers
    assert not any("dropped" in note for note in result.notes())


def test_drop_throttled_leaves_them_out_and_says_how_many() -> None:
    result = _result(drop=True)
    numbers = result.numbers()
    assert numbers["median"] == pytest.approx(1.4876e-3)
    assert numbers["dropped_samples"] == 251
    assert "--drop-throttled: 251 of 298 samples dropped from the statistics" in result.notes()[0]


def test_the_noise_is_that_of_the_samples_the_statistics_use() -> None:
    script = [(1.48e-3, 1980), (1.49e-3, 1980), (1.50e-3, 1980)] + [
        (t, 1700) for t in (1.6e-3, 1.7e-3, 1.8e-3, 1.9e-3)
    ]
    every = measure_fixed(ScriptedTimer(script), [lambda: None], repeats=70)
    assert every.rel_noise == pytest.approx(rel_noise(every.samples))
    fast = measure_fixed(ScriptedTimer(script), [lambda: None], repeats=70, drop_throttled=True)
    unthrottled = [s for i, s in enumerate(fast.samples) if i not in fast.throttled]
    assert (
        fast.rel_noise == pytest.approx(rel_noise(unthrottled)) and fast.rel_noise < every.rel_noise
    )
    # and the adaptive rule stops on that same noise
    rule = StopRule(noise=0.5, min_samples=10, min_time=0.0, timeout=60.0)
    assert measure(ScriptedTimer(script), lambda: None, rule).stop_reason == "noise-target"


def test_json_csv_and_store_carry_the_throttled_share_and_clocks(tmp_path: Any) -> None:
    report = report_of(_result(drop=False))
    entry = to_json(report)["results"][0]
    assert entry["clocks"]["throttled"] == 251 and entry["clocks"]["median_mhz"] == 1700
    assert entry["clocks"]["drop_throttled"] is False and entry["clocks"]["samples_used"] == 298
    rows = list(csv.DictReader(io.StringIO(to_csv(report))))
    assert len(rows) == 298 and {r["used"] for r in rows} == {"1"}
    assert rows[0]["sm_clock_mhz"] == "1980" and rows[-1]["sm_clock_mhz"] == "1700"
    assert float(rows[0]["throttled_fraction"]) == pytest.approx(251 / 298)
    assert float(rows[0]["median_sm_clock_mhz"]) == 1700 and rows[0]["max_sm_clock_mhz"] == "1980"
    run_id = record(report, tmp_path / "r.db")
    with Store.open(tmp_path / "r.db") as store:
        (row,) = store.results(run_id)
    assert row.numbers["throttled_fraction"] == pytest.approx(251 / 298)
    assert row.payload["drop_throttled"] is False and len(row.payload["clocks"]) == 298
    dropped = list(csv.DictReader(io.StringIO(to_csv(report_of(_result(drop=True))))))
    assert sum(r["used"] == "0" for r in dropped) == 251


def test_a_baseline_follows_the_same_rule_as_the_run() -> None:
    base = TimingBaseline(
        source="run 1",
        machine_id="m",
        samples={"k": (1.0, 9.0, 1.0)},
        units={},
        throttled={"k": (1,)},
    )
    assert base.kept(drop_throttled=False) == {"k": (1.0, 9.0, 1.0)}
    assert base.kept(drop_throttled=True) == {"k": (1.0, 1.0)}


def test_history_of_an_old_row_uses_all_its_samples() -> None:
    row = bench_row("mm", {}, [1.0, 1.0, 3.0, 3.0, 3.0])
    payload = {k: v for k, v in row.payload.items() if k != "drop_throttled"}
    payload["throttled"] = [2, 3, 4]
    # what the old filter stored as the median: that of the unthrottled samples only
    numbers = {**row.numbers, "median": 1.0}
    old = ResultRow(key=row.key, status="ok", payload=payload, numbers=numbers)
    (series,) = collect_series([(bench_run(0), [old])])
    assert series.points[0].median == 3.0


def test_text_output_shows_throttled_share_clock_and_dropped_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cuship.bench import session
    from cuship.cli import cli

    asked: list[bool | None] = []

    def fake_run(request: Any, **kw: Any) -> Any:
        asked.append(request.drop_throttled)
        return report_of(_result(drop=bool(request.drop_throttled)))

    monkeypatch.setattr(session, "run_bench", fake_run)
    out = CliRunner().invoke(cli, ["bench", "--no-store"], terminal_width=250)
    assert out.exit_code == 0, out.output
    assert "84% throttled, 1700/1980 MHz" in out.output and "dropped" not in out.output
    out = CliRunner().invoke(cli, ["bench", "--no-store", "--drop-throttled"], terminal_width=250)
    assert asked == [None, True]  # None: as configured ([bench] drop_throttled, default false)
    assert "251 dropped" in out.output
    assert "--drop-throttled left 251 of 298 samples out" in out.output


def test_measurement_without_clocks_reports_no_throttled_share() -> None:
    m = Measurement(samples=(1.0, 2.0), stop_reason="fixed", rel_noise=0.1)
    assert m.throttled_fraction is None and m.median_clock is None
    result = PointResult(key="k", case="k", params={}, status="ok", measurement=m)
    assert "throttled_fraction" not in result.numbers()
