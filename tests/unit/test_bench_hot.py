"""The hot per-call time beside the cold one, on a simulated GPU: graph replays timed with
events and divided by N, the batch fallback when capture fails, and the launch-bound flag."""

from __future__ import annotations

import pytest

from cuship.bench.results import PointResult, to_csv, to_json
from cuship.bench.timers import cuda as cuda_timer
from cuship.bench.timers.cuda import CudaTimer
from cuship.bench.timers.hot import (
    LAUNCH_BOUND_TEXT,
    calls_for,
    launch_bound,
    measure_hot,
    replays_for,
)
from cuship.bench.timers.measure import StopRule, measure
from tests.bench_reports import report_of
from tests.fake_cuda import FakeDevice


def test_n_is_sized_for_a_fifth_of_a_millisecond_replay_within_bounds() -> None:
    assert calls_for(4e-6) == 50
    assert calls_for(2e-3) == 1  # a long kernel: one call per replay
    assert calls_for(1e-9) == 100 and calls_for(0.0) == 100  # capped
    assert replays_for(1e-4) == 20 and replays_for(0.05) == 5


def test_hot_per_call_is_replay_time_over_n_from_a_cuda_graph() -> None:
    gpu = FakeDevice(launch_s=4e-6, kernel_s=1e-6)
    hot = measure_hot(gpu.torch(), gpu.launch, estimate=4e-6)
    # N from the cold estimate (50) made a 50 µs replay: sized again on the measured time.
    assert gpu.captures == [50, 100]
    assert hot.method == "cuda-graph" and hot.calls == 100 and hot.note is None
    assert hot.per_call == pytest.approx(1e-6)
    assert len(hot.samples) == 20 and all(s == pytest.approx(1e-6) for s in hot.samples)
    # each graph: one untimed replay (upload), then timed ones; the 50-call one timed once
    assert gpu.replays == [50, 50] + [100] * 21
    assert gpu.streams_set == []


def test_a_call_that_cannot_be_captured_falls_back_to_a_batch_and_says_so() -> None:
    gpu = FakeDevice(launch_s=4e-6, kernel_s=1e-6, capture_error="operation not permitted")
    hot = measure_hot(gpu.torch(), gpu.launch, estimate=4e-6)
    assert hot.method == "batch" and hot.calls == 50
    assert hot.per_call == pytest.approx(4e-6)
    assert hot.note is not None
    assert "CUDA graph capture failed (RuntimeError: operation not permitted)" in hot.note
    assert "timed 50 launches between two events instead" in hot.note
    assert [getattr(s, "name", None) for s in gpu.streams_set] == ["default"]  # stream restored


def test_launch_bound_when_hot_is_under_half_of_cold() -> None:
    assert launch_bound(hot=1.08e-6, cold=3.94e-6)  # torch.add at 4K elements on an H100
    assert not launch_bound(hot=68.2e-6, cold=71.8e-6)  # 16M elements: the kernel dominates
    assert not launch_bound(hot=1e-6, cold=0.0)


def _timed_point(gpu: FakeDevice, probe_count: int = 1) -> PointResult:
    class Probe:
        def device_events(self, call: object) -> int:
            return probe_count

    timer = CudaTimer(gpu.torch(), warmup_s=0.0, probe=Probe())
    rule = StopRule(noise=0.01, min_samples=5, min_time=0.0, timeout=5.0)
    m = measure(timer, gpu.launch, rule)
    return PointResult(
        key="add[n=4096]", case="add", params={"n": 4096}, status="ok", measurement=m
    )


@pytest.fixture(autouse=True)
def _no_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cuda_timer, "_nvml_handle", lambda device: (None, ()))


def test_cold_and_hot_side_by_side_and_a_launch_bound_case_is_flagged() -> None:
    result = _timed_point(FakeDevice(launch_s=4e-6, kernel_s=1e-6))
    numbers = result.numbers()
    assert numbers["median"] == pytest.approx(4e-6)  # cold: one launch between two events
    assert numbers["hot_per_call"] == pytest.approx(1e-6)
    assert numbers["hot_over_cold"] == pytest.approx(0.25)
    assert result.launch_bound
    assert any(
        LAUNCH_BOUND_TEXT in note and note.startswith("launch-bound") for note in result.notes()
    )
    entry = to_json(report_of(result))["results"][0]
    assert entry["timing"]["cold_median"] == pytest.approx(4e-6)
    assert entry["timing"]["hot_per_call"] == pytest.approx(1e-6)
    assert entry["timing"]["hot_method"] == "cuda-graph" and entry["timing"]["hot_calls"] == 100
    assert entry["timing"]["launch_bound"] is True
    assert entry["payload"]["hot"]["method"] == "cuda-graph"
    row = to_csv(report_of(result)).splitlines()[1].split(",")
    header = to_csv(report_of(result)).splitlines()[0].split(",")
    values = dict(zip(header, row, strict=True))
    assert values["hot_method"] == "cuda-graph" and values["launch_bound"] == "1"
    assert float(values["hot_per_call"]) == pytest.approx(1e-6)


def test_a_kernel_bound_case_is_not_flagged() -> None:
    result = _timed_point(FakeDevice(launch_s=72e-6, kernel_s=68e-6))
    assert not result.launch_bound
    assert result.numbers()["hot_per_call"] == pytest.approx(68e-6)
    assert not any("launch-bound" in note for note in result.notes())


def test_hot_is_measured_once_after_the_cold_samples() -> None:
    gpu = FakeDevice()
    result = _timed_point(gpu)
    assert result.measurement is not None
    # warm-up 1 + samples + 3 side-stream warm-up calls per capture; two captures
    assert len(gpu.captures) == 2
    assert gpu.launches == 1 + len(result.samples) + 2 * 3
