"""``cuship bench --json``, ``cuship bench --burn-in DUR --json`` and ``cuship bench history
--json`` follow their published JSON Schemas: documents made of real library objects (a real
fingerprint, comparison, floor, peak share, ncu profile, trends and store) pass; a key
missing, an unknown key or a wrong type fails."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

import cuship.machine
from cuship.bench import env
from cuship.bench.burnin import BurnIn, trend
from cuship.bench.gate import apply_floor
from cuship.bench.history.report import bench_history
from cuship.bench.ncu.profile import NcuProfile, NcuSession
from cuship.bench.peak import peak_share
from cuship.bench.results import PointResult, to_json
from cuship.bench.stats import compare
from cuship.bench.timers.hot import Hot
from cuship.bench.timers.measure import Measurement
from cuship.compat import load
from cuship.docs.documents import document_schemas
from cuship.errors import NothingToDo
from cuship.provenance import PackageOrigin, Provenance
from tests.bench_factory import synthetic_runs, write_store
from tests.bench_reports import report_of
from tests.jsondocs import BENCH, BENCH_HISTORY, BURN_IN, schema_errors
from tests.unit.test_json_documents import _objects
from tests.unit.test_nvml_notes import _install, _machine_with_a_gpu

H100 = "NVIDIA H100 80GB HBM3"


@pytest.fixture
def fingerprint(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setattr(cuship.machine, "fingerprint", _machine_with_a_gpu)
    _install(monkeypatch, None)
    return env.bench_fingerprint({}, timer="cuda", project_package="demo")


def _timed() -> PointResult:
    hot = Hot(per_call=2e-6, samples=(2e-6, 2.1e-6), calls=50, method="cuda-graph")
    samples = (1e-5, 1.1e-5, 1.2e-5, 1e-5)
    m = Measurement(samples=samples, throttled=(1,), stop_reason="noise-target", rel_noise=0.01,
                    clocks=(1980, 1500, None, 1980), max_clock=1980, hot=hot)  # fmt: skip
    work = {"bytes": 1.2e7, "flops": 1e6, "ops": None}
    point = PointResult(key="saxpy[n=1M]", case="saxpy", params={"n": 2**20, "dtype": "float32"},
                        status="ok", measurement=m, work=work)  # fmt: skip
    peak = load().peak(H100)
    assert peak is not None and point.cold is not None
    share = peak_share(peak, median=point.cold, work=work, dtype="fp32", origin="params")
    floor = apply_floor({"H100": "1e15 GB/s"}, H100, point.numbers())
    return dataclasses.replace(
        point,
        peak=share,
        comparison=compare(list(samples), [s * 0.5 for s in samples], 0.05),
        floor=floor,
        profile=NcuProfile(kernels=1, kernel_names=("saxpy",), kernel_time=9e-6, wall_time=2.0),
    )


def _report(fingerprint: dict[str, Any]) -> Any:
    errored = PointResult(key="broken", case="broken", params={}, status="errored",
                          measurement=None, error="RuntimeError: boom")  # fmt: skip
    origin = PackageOrigin(name="demo", file="/site/demo/__init__.py", origin="installed")
    return dataclasses.replace(
        report_of(_timed(), errored, fingerprint=fingerprint),
        baseline="run 3",
        run_id=4,
        label="v1",
        code_hash={"saxpy": "abc"},
        provenance=Provenance(packages=(origin,), note=None),
        profile=NcuSession(metric_set="full", ncu="/usr/bin/ncu", reports="bench/results/ncu"),
    )


def test_a_bench_report_with_every_part_follows_the_bench_schema(
    fingerprint: dict[str, Any],
) -> None:
    document = to_json(_report(fingerprint))
    timed = document["results"][0]
    assert {"clocks", "timing", "peak", "ncu", "comparison", "floor"} <= set(timed)
    assert document["run"]["verdict"] == "errored"
    assert schema_errors(BENCH, document) == []
    plain = report_of(dataclasses.replace(_timed(), profile=None), fingerprint=fingerprint)
    assert schema_errors(BENCH, to_json(plain)) == []


def test_the_bench_schema_refuses_a_missing_key_an_unknown_key_and_a_wrong_type(
    fingerprint: dict[str, Any],
) -> None:
    good: dict[str, Any] = to_json(_report(fingerprint))
    timed = good["results"][0]
    run = good["run"]
    missing = {**good, "run": {k: v for k, v in run.items() if k != "fingerprint"}}
    unknown = {**good, "results": [{**timed, "floor": {**timed["floor"], "why": "x"}}]}
    wrong = {**good, "results": [{**timed, "payload": {**timed["payload"], "samples": ["1"]}}]}
    bad_verdict = {**good, "run": {**run, "verdict": "fine"}}
    for document in (missing, unknown, wrong, bad_verdict):
        assert schema_errors(BENCH, document) != []


def _burn_in(leak: bool) -> BurnIn:
    times = tuple(float(t) for t in range(20))
    rss = tuple(1000 + (t * 2**21 if leak else 0) for t in range(20))
    series = [float(v) for v in rss]
    return BurnIn(key="saxpy[n=1024]", duration=20.0, calls=4000, times=times, rss=rss,
                  gpu=(0,) * 20, trends=(trend("host RSS", times, series, 2**20),))  # fmt: skip


def test_a_burn_in_follows_the_burn_in_schema() -> None:
    leaking = _burn_in(leak=True).to_json()
    assert leaking["leaking"] is True
    failed = dataclasses.replace(_burn_in(leak=False), trends=(), error="RuntimeError: x")
    for document in (leaking, _burn_in(leak=False).to_json(), failed.to_json()):
        assert schema_errors(BURN_IN, document) == []
    assert schema_errors(BURN_IN, {**leaking, "calls": 1.5}) != []
    assert schema_errors(BURN_IN, {k: v for k, v in leaking.items() if k != "trends"}) != []


def test_bench_history_follows_the_history_schema(tmp_path: Path) -> None:
    store = write_store(tmp_path / "r.db", synthetic_runs(30, step_at=12, factor=1.1, seed=1))
    report = bench_history(tmp_path, store)
    assert report.steps == 2 and report.summary_line().startswith("2 steps in 2 series from ")
    document: dict[str, Any] = report.to_json()
    assert schema_errors(BENCH_HISTORY, document) == []
    series = document["series"][0]
    assert schema_errors(BENCH_HISTORY, {**document, "series": [{**series, "x": 1}]}) != []


def test_bench_history_that_matches_nothing_is_nothing_to_do(tmp_path: Path) -> None:
    store = write_store(tmp_path / "r.db", synthetic_runs(30, step_at=12, factor=1.1, seed=1))
    with pytest.raises(NothingToDo, match="match case 'nope'"):
        bench_history(tmp_path, store, case="nope")


@pytest.mark.parametrize("name", [BENCH, BURN_IN, BENCH_HISTORY])
def test_every_key_is_described_and_every_object_closed(name: str) -> None:
    for obj in _objects(document_schemas()[name]):
        assert obj["additionalProperties"] is False
        for key, sub in obj["properties"].items():
            assert sub.get("description"), f"{name}: {key} has no description"
