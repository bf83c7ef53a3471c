"""Bench declarations, keys, floors, baselines, store rows and exports (no processes spawned)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from cuship.bench import case, case_key
from cuship.bench.burnin import parse_duration, rss_bytes, trend
from cuship.bench.env import cpu_model, machine_id
from cuship.bench.gate import (
    apply_floor,
    check_machine,
    floor_for,
    floor_label,
    load_baseline,
    parse_floor,
)
from cuship.bench.registry import code_hash, points
from cuship.bench.results import CSV_COLUMNS, BenchReport, PointResult, export_name, to_csv, to_json
from cuship.bench.session import record
from cuship.bench.stats import compare
from cuship.bench.timers.measure import Measurement
from cuship.config import load_config
from cuship.errors import ConfigError, InputError, UsageError
from cuship.store import Store


@case(
    params={"n": [8, 16], "dtype": ["float32"]},
    setup=lambda rng, n, dtype: {"x": rng.standard_normal(n).astype(dtype)},
    bytes=lambda n, dtype: 4 * n,
    ops=lambda n, dtype: n,
)
def double(x: Any) -> Any:
    return x * 2


def test_case_key_sorts_params_and_bare_cases_have_no_brackets() -> None:
    assert case_key("saxpy", {"n": 1024, "dtype": "float32"}) == "saxpy[dtype=float32,n=1024]"
    assert case_key("noop", {}) == "noop"
    assert [p.key for p in points([double])] == [
        "double[dtype=float32,n=8]",
        "double[dtype=float32,n=16]",
    ]


def test_setup_is_seeded_never_zeros_and_work_model_is_per_point() -> None:
    first = double.inputs({"n": 8, "dtype": "float32"}, seed=1)["x"]
    again = double.inputs({"n": 8, "dtype": "float32"}, seed=1)["x"]
    other = double.inputs({"n": 8, "dtype": "float32"}, seed=2)["x"]
    assert (first == again).all() and not (first == other).all() and (first != 0).all()
    assert double.work({"n": 8, "dtype": "float32"}) == {"bytes": 32.0, "flops": None, "ops": 8.0}
    assert len(code_hash(double)) == 12


def test_machine_id_covers_the_contract_fields_only() -> None:
    fp = {"gpu": None, "gpu_count": 0, "driver": None, "cuda": "13.0", "cpu_model": "EPYC"}
    fp |= {"cpu_count": 2, "timer": "wall", "python": "3.11.7"}
    same = machine_id({**fp, "python": "3.12.1", "packages": {"numpy": "2"}})
    assert machine_id(fp) == same and len(same) == 12
    assert machine_id({**fp, "timer": "cuda-events"}) != same
    assert cpu_model("processor\t: 0\nmodel name\t: AMD EPYC 7B13\n") == "AMD EPYC 7B13"


def test_floors_parse_and_match_gpu_models_like_compat() -> None:
    assert parse_floor("5000 ops/s").metric == "ops_per_s"
    assert parse_floor("1.5 TFLOP/s").value == 1.5
    with pytest.raises(UsageError, match="'fast' is not a throughput floor"):
        parse_floor("fast")
    floors = {"H100": "900 GB/s", "A100": "1200 GB/s", "CPU": "5 GB/s"}
    assert floor_for(floors, "NVIDIA H100 80GB HBM3") == ("H100", parse_floor("900 GB/s"))
    assert floor_for(floors, "NVIDIA A100-SXM4-80GB") == ("A100", parse_floor("1200 GB/s"))
    assert floor_for(floors, None) == ("CPU", parse_floor("5 GB/s"))
    assert floor_for({"H100": "1 GB/s"}, "NVIDIA RTX A1000") is None
    missed = apply_floor(floors, None, {"gbps": 4.0})
    assert missed is not None and missed.missed and "MISSED" in missed.describe()
    assert apply_floor({"CPU": "1 ops/s"}, None, {"gbps": 4.0}) is None  # no ops model


def test_config_bench_section_and_bad_floor(tmp_path: Path) -> None:
    (tmp_path / "cuship.toml").write_text(
        '[bench]\nmodules = ["b.py"]\nthreshold = 0.1\n[bench.floors]\nH100 = "5000 ops/s"\n'
        "[bench.cases.saxpy]\nthreshold = 0.2\n"
    )
    bench = load_config(tmp_path).bench
    assert bench.threshold == 0.1 and bench.cases["saxpy"].threshold == 0.2
    assert bench.floors == {"H100": "5000 ops/s"} and bench.noise == 0.005
    (tmp_path / "cuship.toml").write_text('[bench.floors]\nH100 = "fast"\n')
    with pytest.raises(ConfigError, match=r"bench\.floors.*'fast' is not a floor"):
        load_config(tmp_path)


def _report(samples: tuple[float, ...], *, gpu: str | None = None, **kw: Any) -> BenchReport:
    m = Measurement(samples=samples, throttled=(1,), stop_reason="fixed", rel_noise=0.01)
    result = PointResult(
        key="double[n=8]", case="double", params={"n": 8}, status="ok", measurement=m,
        work={"bytes": 32.0, "flops": None, "ops": 8.0},
    )  # fmt: skip
    broken = PointResult(
        key="boom",
        case="boom",
        params={},
        status="errored",
        measurement=None,
        error="ValueError: x",
    )
    fp = {"machine_id": "abc123abc123", "gpu": gpu, "timer": "wall"}
    return BenchReport(
        project="demo", path=".", started=1_700_000_000.0, finished=1_700_000_001.0,
        fingerprint=fp, seeds=2, repeats=2, label=None, code_hash={"double": "0" * 12},
        results=(result, broken), **kw,
    )  # fmt: skip


def test_csv_has_one_row_per_sample_with_seed_and_throttled() -> None:
    rows = list(csv.DictReader(io.StringIO(to_csv(_report((1.0, 2.0, 3.0, 4.0))))))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert [r["seed"] for r in rows] == ["0", "0", "1", "1"]
    assert [r["throttled"] for r in rows] == ["0", "1", "0", "0"]
    assert rows[0]["params"] == '{"n":8}' and rows[0]["unit"] == "s"
    assert export_name({"gpu": "NVIDIA H100 80GB HBM3"}, 0, "csv").startswith("benchmark_h100-80gb")
    assert export_name({"gpu": None}, 0, "json").startswith("benchmark_cpu_")


def test_report_verdict_and_exit_code_follow_the_gates() -> None:
    report = _report((1.0, 1.0, 1.0))
    assert report.verdict == "errored" and report.exit_code == 1
    numbers = report.results[0].numbers()
    assert numbers["median"] == 1.0 and numbers["gbps"] == pytest.approx(32e-9)


def test_assert_floors_that_asserted_nothing_is_exit_4_never_a_pass() -> None:
    from dataclasses import replace

    report = _report((1.0, 1.0, 1.0), gpu="NVIDIA H200", assert_floors=True)
    timed = replace(report, results=report.results[:1])  # the errored point left out
    assert timed.unasserted and timed.verdict == "no-floor" and timed.exit_code == 4
    floors = {"H100": "1e9 ops/s", "CPU": "1 ops/s"}
    assert apply_floor(floors, "NVIDIA H200", timed.results[0].numbers()) is None
    held = apply_floor({**floors, "H200": "1 ops/s"}, "NVIDIA H200", timed.results[0].numbers())
    checked = replace(timed, results=(replace(timed.results[0], floor=held),))
    assert (checked.unasserted, checked.verdict, checked.exit_code) == (False, "ok", 0)
    assert replace(timed, assert_floors=False).exit_code == 0  # not asked: nothing to refuse
    assert report.exit_code == 1  # an errored point outranks it
    # the label the error tells the user to add, as a TOML key
    assert (floor_label("NVIDIA H200"), floor_label(None)) == ("H200", "CPU")
    assert floor_label("NVIDIA GeForce RTX 4090") == '"RTX 4090"'


def test_store_rows_and_json_export_follow_the_contract(tmp_path: Path) -> None:
    report = _report((1.0, 2.0, 3.0, 4.0))
    run_id = record(report, tmp_path / "r.db")
    with Store.open(tmp_path / "r.db") as store:
        (run,) = store.runs(kind="bench")
        rows = store.results(run_id)
    assert run.meta["format"] == "cuship-bench/1" and run.verdict == "errored"
    assert set(run.meta) == {
        "format",
        "seeds",
        "repeats",
        "label",
        "code_hash",
        "path",
        "provenance",
    }
    assert rows[0].payload["samples"] == [1.0, 2.0, 3.0, 4.0] and rows[0].payload["throttled"] == [
        1
    ]
    assert set(rows[0].payload) == {
        "case", "params", "unit", "samples", "throttled", "work", "rel_noise", "stop_reason", "error",
        "clocks", "max_clock_mhz", "drop_throttled", "hot", "peak", "notes",
    }  # fmt: skip
    assert rows[1].status == "errored" and rows[1].payload["error"] == "ValueError: x"
    doc = to_json(report)
    assert doc["format"] == "cuship-bench/1" and doc["results"][0]["key"] == "double[n=8]"
    json.dumps(doc, allow_nan=False)


def test_baseline_file_from_another_format_is_an_input_error(tmp_path: Path) -> None:
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"format": "cuship-bench/0", "cuship_version": "0.0.1"}))
    with pytest.raises(InputError, match=r"written by cuship 0\.0\.1 \(format 'cuship-bench/0'\)"):
        load_baseline(str(old), store_path=tmp_path / "r.db", project="demo", machine_id="x")
    with pytest.raises(InputError, match="neither a run id"):
        load_baseline("nope.json", store_path=tmp_path / "r.db", project="demo", machine_id="x")
    with pytest.raises(InputError, match="no results store"):
        load_baseline("latest", store_path=tmp_path / "r.db", project="demo", machine_id="x")


def test_baseline_round_trip_and_cross_machine_refusal(tmp_path: Path) -> None:
    path = tmp_path / "base.json"
    path.write_text(json.dumps(to_json(_report((1.0, 2.0, 3.0)))))
    base = load_baseline(str(path), store_path=tmp_path / "r.db", project="demo", machine_id="x")
    assert base.samples["double[n=8]"] == (1.0, 2.0, 3.0) and base.machine_id == "abc123abc123"
    check_machine(base, "abc123abc123", allow_cross_machine=False)
    check_machine(base, "other", allow_cross_machine=True)
    with pytest.raises(UsageError, match="--allow-cross-machine"):
        check_machine(base, "other", allow_cross_machine=False)
    record(_report((1.0, 2.0, 3.0)), tmp_path / "r.db")
    latest = load_baseline("latest", store_path=tmp_path / "r.db", project="demo", machine_id="x")
    assert latest.source == "run 1" and compare(
        [1.0, 2.0, 3.0], latest.samples["double[n=8]"], 0.05
    )


def test_burn_in_pure_parts() -> None:
    assert parse_duration("90s") == 90 and parse_duration("10m") == 600
    assert parse_duration("1h") == 3600 and parse_duration("2.5") == 2.5
    with pytest.raises(UsageError, match="'soon' is not a duration"):
        parse_duration("soon")
    assert rss_bytes("1000 250 30 1 0 40 0", 4096) == 250 * 4096
    times = [float(t) for t in range(20)]
    growing = trend("rss", times, [1e8 + 2**20 * t for t in times], tolerance=2**20)
    flat = trend("rss", times, [1e8 + (t % 2) * 4096 for t in times], tolerance=2**20)
    assert growing.leaking and not flat.leaking and "GROWING" in growing.describe()


def test_csv_carries_a_profiled_points_ncu_figures_on_each_sample_row() -> None:
    """The call profiled on the H100 (tests/fixtures/h100/ncu-basic-add-sum.csv) on each row of
    its point; empty cells for a point never profiled."""
    from dataclasses import replace
    from pathlib import Path

    from cuship.bench.ncu.metrics import parse_ncu_metrics
    from cuship.bench.ncu.profile import METRICS, aggregate

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "h100" / "ncu-basic-add-sum.csv"
    profile = aggregate(parse_ncu_metrics(fixture.read_text(), METRICS))
    report = _report((1.0, 2.0))
    profiled = replace(report, results=(replace(report.results[0], profile=profile),))
    rows = list(csv.DictReader(io.StringIO(to_csv(profiled))))
    assert len(rows) == 2 and tuple(rows[0]) == CSV_COLUMNS
    for row in rows:
        assert row["ncu_kernels"] == "2" and row["ncu_error"] == ""
        assert float(row["ncu_kernel_time"]) == pytest.approx((62_976 + 30_080) * 1e-9)
        assert 0.69 < float(row["ncu_dram_peak_fraction"]) < 0.87
    plain = list(csv.DictReader(io.StringIO(to_csv(report))))
    assert {plain[0][c] for c in CSV_COLUMNS if c.startswith("ncu_")} == {""}
