"""``--profile ncu``'s figures: one call's kernels summed and duration-weighted, what a result
stores and shows with them, and the exit code when a profile could not be taken."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from cuship.bench.ncu.metrics import NcuRow, parse_ncu_metrics
from cuship.bench.ncu.profile import (
    METRICS,
    NcuProfile,
    NcuSession,
    aggregate,
    profile_notes,
    profile_numbers,
    short_name,
)
from cuship.bench.results import PointResult, to_json
from cuship.bench.timers.measure import Measurement
from cuship.store import Store
from tests.bench_reports import report_of

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "h100" / "ncu-metrics-add.csv"
ADD = "void vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, std::array<char *, 3>>(int, T2, T3)"


def _h100_rows(ids: set[int]) -> tuple[NcuRow, ...]:
    return tuple(r for r in parse_ncu_metrics(FIXTURE.read_text()) if r.id in ids)


def test_one_call_of_three_kernels_sums_time_and_weights_shares_by_duration() -> None:
    # kernels 0 and 1 (random fills) and 2 (an add) of the H100 recording, as one call
    profile = aggregate(_h100_rows({0, 1, 2}))
    durations = (7488e-9, 7424e-9, 4224e-9)
    total = sum(durations)
    assert profile.ok and profile.kernels == 3
    assert profile.kernel_time == pytest.approx(total)

    def weighted(*percents: float) -> float:
        return sum(p * d for p, d in zip(percents, durations, strict=True)) / total / 100

    assert profile.dram_peak_fraction == pytest.approx(weighted(0.04, 0.04, 14.94))
    assert profile.occupancy_fraction == pytest.approx(weighted(50.31, 50.22, 10.60))
    assert profile.sm_fraction == pytest.approx(weighted(45.90, 46.12, 2.09))
    assert profile.dram_bytes_per_s is None  # not in the recording
    assert profile.kernel_names == (
        "unnamed>::distribution_elementwise_grid_stride_kernel",
        "vectorized_elementwise_kernel",
    )


def test_dram_throughput_over_several_kernels_is_total_bytes_over_total_time() -> None:
    def row(ident: int, metric: str, unit: str, value: float) -> NcuRow:
        return NcuRow(id=ident, kernel=ADD, metric=metric, unit=unit, value=value)

    rows = (
        row(0, "gpu__time_duration.sum", "usecond", 10.0),
        row(0, "dram__bytes.sum.per_second", "Tbyte/second", 3.0),  # 30 MB in 10 µs
        row(1, "gpu__time_duration.sum", "nsecond", 30_000.0),
        row(1, "dram__bytes.sum.per_second", "Gbyte/second", 1000.0),  # 30 MB in 30 µs
        row(1, "launch__block_size", "", 128.0),  # not one of ours: left out
        row(2, "dram__throughput.avg.pct_of_peak_sustained_elapsed", "cycle", 5.0),  # bad unit
    )
    profile = aggregate(rows, metric_set="full")
    assert profile.kernels == 3 and profile.metric_set == "full"
    assert profile.kernel_time == pytest.approx(40e-6)
    assert profile.dram_bytes_per_s == pytest.approx(60e6 / 40e-6)
    assert profile.dram_gbps == pytest.approx(1500.0)
    assert profile.dram_peak_fraction is None  # a percentage in cycles is not read
    empty = aggregate(())
    assert not empty.ok and empty.error == "ncu profiled no kernel in the call"


def test_whole_recording_as_one_call() -> None:
    profile = aggregate(_h100_rows(set(range(32))))
    assert profile.kernels == 32
    assert profile.kernel_time == pytest.approx(
        sum(r.seconds for r in _h100_rows(set(range(32))) if r.metric == "gpu__time_duration.sum")
    )
    assert 0.10 < (profile.dram_peak_fraction or 0) < 0.17


def test_profile_round_trips_through_json_and_describes_itself() -> None:
    profile = NcuProfile(
        metric_set="full",
        kernels=2,
        kernel_names=("saxpy_kernel",),
        kernel_time=75e-6,
        dram_bytes_per_s=2.68e12,
        dram_peak_fraction=0.80,
        occupancy_fraction=0.62,
        sm_fraction=0.12,
        report="bench/results/ncu/saxpy-1234abcd.ncu-rep",
        wall_time=4.2,
    )
    text = json.dumps(profile.to_json())
    assert NcuProfile.from_json(json.loads(text)) == profile
    assert profile.describe() == (
        "75 µs in 2 kernels, DRAM 2680 GB/s (80% of peak), occupancy 62%, SM 12%"
    )
    failed = NcuProfile(error="ERR_NVGPUCTRPERM: counters restricted")
    assert NcuProfile.from_json(failed.to_json()) == failed and not failed.ok
    assert failed.describe() == "not profiled: ERR_NVGPUCTRPERM: counters restricted"
    assert NcuProfile.from_json({}) == NcuProfile()
    assert short_name(ADD) == "vectorized_elementwise_kernel"
    assert short_name("saxpy_kernel(float, const float *, float *, int)") == "saxpy_kernel"


def test_numbers_and_the_agreement_with_cuship_bandwidth() -> None:
    profile = NcuProfile(kernels=1, kernel_time=80e-6, dram_bytes_per_s=2.5e12,
                         dram_peak_fraction=0.75, occupancy_fraction=0.5, sm_fraction=0.1)  # fmt: skip
    numbers = profile_numbers(profile, gbps=2400.0, peak_bandwidth_fraction=0.72)
    assert numbers == pytest.approx(
        {
            "ncu_kernel_time": 80e-6,
            "ncu_dram_gbps": 2500.0,
            "ncu_dram_peak_fraction": 0.75,
            "ncu_occupancy_fraction": 0.5,
            "ncu_sm_fraction": 0.1,
            "ncu_kernels": 1.0,
            "ncu_bw_ratio": 0.96,
            "ncu_peak_ratio": 0.96,
        }
    )
    assert profile_notes(profile, numbers | {"gbps": 2400.0}) == []  # within 10 %
    off = profile_numbers(profile, gbps=1000.0, peak_bandwidth_fraction=None)
    assert "ncu_peak_ratio" not in off and off["ncu_bw_ratio"] == pytest.approx(0.4)
    (note,) = profile_notes(profile, off | {"gbps": 1000.0})
    assert "0.40x ncu's DRAM 2500 GB/s" in note
    failed = NcuProfile(error="ncu ran past 600 s")
    assert profile_numbers(failed, gbps=1.0, peak_bandwidth_fraction=None) == {}
    assert profile_notes(failed, {}) == ["ncu: not profiled: ncu ran past 600 s"]
    assert profile_numbers(None, gbps=1.0, peak_bandwidth_fraction=None) == {}


def _result(
    key: str, profile: NcuProfile | None, samples: tuple[float, ...] = (1e-4,) * 5
) -> PointResult:
    m = Measurement(samples=samples, stop_reason="fixed", rel_noise=0.01)
    return PointResult(key=key, case=key, params={}, status="ok", measurement=m,
                       work={"bytes": 2.4e8, "flops": None, "ops": None}, profile=profile)  # fmt: skip


GOOD = NcuProfile(kernels=1, kernel_time=95e-6, dram_bytes_per_s=2.5e12, dram_peak_fraction=0.75,
                  occupancy_fraction=0.5, sm_fraction=0.1, wall_time=3.0)  # fmt: skip
SESSION = NcuSession(metric_set="basic", ncu="/usr/local/cuda/bin/ncu", version="2025.3.1.0")


def test_a_profiled_result_stores_and_exports_its_figures(tmp_path: Path) -> None:
    result = _result("saxpy[n=16777216]", GOOD)
    numbers = result.numbers()
    assert numbers["gbps"] == pytest.approx(2400.0)  # 2.4e8 bytes in 100 µs
    assert numbers["ncu_bw_ratio"] == pytest.approx(0.96)
    assert numbers["ncu_kernel_time"] == pytest.approx(95e-6)
    assert result.payload()["ncu"] == GOOD.to_json()
    report = dataclasses.replace(report_of(result), profile=SESSION)
    assert report.exit_code == 0 and report.meta()["profile"]["version"] == "2025.3.1.0"
    assert report.meta()["profile"]["metrics"] == list(METRICS)
    doc = to_json(report)
    (entry,) = doc["results"]
    assert entry["ncu"]["dram_bytes_per_s"] == 2.5e12
    assert entry["numbers"]["ncu_dram_peak_fraction"] == 0.75
    assert doc["run"]["meta"]["profile"]["set"] == "basic"
    json.dumps(doc, allow_nan=False)
    from cuship.bench.session import record

    run_id = record(report, tmp_path / "r.db")
    with Store.open(tmp_path / "r.db") as store:
        (row,) = store.results(run_id)
    assert row.numbers["ncu_dram_gbps"] == pytest.approx(2500.0)
    assert NcuProfile.from_json(row.payload["ncu"]) == GOOD


def test_a_run_without_profile_keeps_its_old_shape() -> None:
    result = _result("saxpy", None)
    assert "ncu" not in result.payload() and not any(k.startswith("ncu") for k in result.numbers())
    report = report_of(result)
    assert "profile" not in report.meta() and "ncu" not in to_json(report)["results"][0]


def test_a_failed_profile_keeps_the_timing_notes_why_and_exits_3() -> None:
    failed = NcuProfile(error="ERR_NVGPUCTRPERM: counters restricted to administrators")
    report = dataclasses.replace(
        report_of(_result("a", GOOD), _result("b", failed)), profile=SESSION
    )
    assert [r.key for r in report.unprofiled] == ["b"]
    assert report.verdict == "ok" and report.exit_code == 3
    b = report.results[1]
    assert b.numbers()["median"] == pytest.approx(1e-4)  # the timing stands
    assert "ncu: not profiled: ERR_NVGPUCTRPERM" in " ".join(b.notes())
    errored = PointResult(key="c", case="c", params={}, status="errored", measurement=None,
                          error="ValueError: x")  # fmt: skip
    worse = dataclasses.replace(report, results=(*report.results, errored))
    assert worse.exit_code == 1  # a failed gate outranks a missing profile


def _store_of_profiled_run(tmp_path: Path) -> Path:
    from cuship.bench.session import record

    failed = NcuProfile(error="ERR_NVGPUCTRPERM: counters restricted")
    report = dataclasses.replace(
        report_of(_result("saxpy[n=16777216]", GOOD), _result("softmax", failed)),
        profile=SESSION,
    )
    record(report, tmp_path / "r.db")
    return tmp_path / "r.db"


def test_the_dashboard_shows_ncu_figures_next_to_the_timings(tmp_path: Path) -> None:
    from cuship.bench.history.dashboard import build_site
    from cuship.store.read import load_bench_runs

    index = build_site(load_bench_runs(_store_of_profiled_run(tmp_path)))["index.html"]
    header = index[index.index("<thead>") : index.index("</thead>")]
    for column in ("kernel time (ncu)", "DRAM (ncu)", "occupancy", "SM throughput", "BW vs ncu"):
        assert column in header
    assert header.index("throughput</th>") < header.index("kernel time (ncu)")  # beside timings
    saxpy = index[index.index(">saxpy[n=16777216]<") :].split("</tr>", 1)[0]
    for cell in ("95 µs", "2500 GB/s (75% of peak)", ">50%<", ">10%<", ">0.96x<"):
        assert cell in saxpy, cell
    softmax = index[index.index(">softmax<") :].split("</tr>", 1)[0]
    assert "not profiled" in softmax


def test_an_unprofiled_store_has_no_ncu_columns(tmp_path: Path) -> None:
    from cuship.bench.history.dashboard import build_site
    from tests.bench_factory import synthetic_runs

    assert "(ncu)" not in build_site(synthetic_runs(5, step_at=99))["index.html"]


def test_bench_attestation_carries_the_profile_and_old_exports_are_unchanged() -> None:
    from cuship.attest.predicates import bench_predicate

    profiled = dataclasses.replace(report_of(_result("saxpy", GOOD)), profile=SESSION)
    predicate = bench_predicate(to_json(profiled), environment={})
    assert predicate["profile"]["tool"] == "ncu" and predicate["profile"]["version"] == "2025.3.1.0"
    (row,) = predicate["results"]
    assert row["ncu"]["kernel_time"] == 95e-6 and row["numbers"]["ncu_bw_ratio"] > 0
    plain = bench_predicate(to_json(report_of(_result("saxpy", None))), environment={})
    assert "profile" not in plain and "ncu" not in plain["results"][0]
    assert set(plain) == {
        "format", "verdict", "results", "environment", "environment_source", "cuship",
    }  # fmt: skip


def test_the_text_table_and_summary_show_the_profile() -> None:
    from cuship.cli._benchtable import COLUMNS, NCU_COLUMNS, point_row

    failed = NcuProfile(error="ERR_NVGPUCTRPERM: counters restricted")
    report = dataclasses.replace(
        report_of(_result("saxpy", GOOD), _result("softmax", failed)), profile=SESSION
    )
    good, bad = (point_row(r, profiled=True) for r in report.results)
    assert len(good) == len(COLUMNS) + len(NCU_COLUMNS)
    assert good[-2] == "95 µs in 1 kernel, DRAM 2500 GB/s (75% of peak), occupancy 50%, SM 10%"
    assert good[-1] == "0.96x GB/s"
    assert bad[-2] == "NOT PROFILED (see notes)" and bad[-1] == ""
    assert len(point_row(report.results[0])) == len(COLUMNS)  # unprofiled runs: the old table
    assert "; ncu (basic): 1 of 2 profiled; verdict ok" in report.summary_line()


def test_each_reason_a_point_was_not_profiled_is_one_error_line() -> None:
    denied = NcuProfile(error="ERR_NVGPUCTRPERM: counters restricted")
    crashed = NcuProfile(error="ncu printed no metrics (exit 1): KeyError: 'x'")
    report = dataclasses.replace(
        report_of(*(_result(k, p) for k, p in (("a", denied), ("b", GOOD), ("c", denied),
                                               ("d", denied), ("e", crashed)))),
        profile=SESSION,
    )  # fmt: skip

    assert report.profile_errors() == [
        "a (and 2 more) not profiled: ERR_NVGPUCTRPERM: counters restricted",
        "e not profiled: ncu printed no metrics (exit 1): KeyError: 'x'",
    ]


def test_a_profiled_export_is_attested_and_verifies(tmp_path: Path) -> None:
    from cuship.attest.keys import keygen, load_signing_key, load_verify_key
    from cuship.attest.run import attest_files
    from cuship.attest.verify import verify

    report = dataclasses.replace(report_of(_result("saxpy", GOOD)), profile=SESSION)
    results = tmp_path / "bench.json"
    results.write_text(json.dumps(to_json(report), allow_nan=False))
    pair = keygen(tmp_path / "key")
    (envelope,) = attest_files(
        [results], load_signing_key(pair.private), kind="bench", environ={}, machine=dict
    ).envelopes
    checked = verify(envelope, key=load_verify_key(pair.public), files=[results])
    assert checked.problems == () and checked.predicate is not None
    assert checked.predicate["profile"]["set"] == "basic"
    assert checked.predicate["results"][0]["ncu"]["dram_bytes_per_s"] == 2.5e12
