"""Host code timed with the CUDA timer is refused: a case that launches no kernel when checked
(after the run's points were timed) is an errored point saying "timed host code"; one that
launches kernels is timed; a profiler that cannot see the device is a note, never a refusal."""

from __future__ import annotations

from typing import Any

import pytest

from cuship.bench import case
from cuship.bench.registry import Point, points
from cuship.bench.runner import Protocol, run_interleaved, run_point, run_points
from cuship.bench.timers import cuda as cuda_timer
from cuship.bench.timers.cuda import CudaTimer
from cuship.bench.timers.launches import (
    HostCodeTimed,
    ProfilerUnavailable,
    TorchProfilerProbe,
    check_launches,
)
from cuship.bench.timers.measure import StopRule
from tests.fake_cuda import FakeDevice

RULE = StopRule(noise=0.01, min_samples=5, min_time=0.0, timeout=5.0)


class FakeProbe:
    """Reports a fixed number of device events (or raises ProfilerUnavailable)."""

    def __init__(self, count: int | None) -> None:
        self.count = count
        self.calls = 0

    def device_events(self, call: Any) -> int:
        self.calls += 1
        if self.count is None:
            raise ProfilerUnavailable("torch.profiler is unavailable (ImportError: no kineto)")
        return self.count


@pytest.fixture(autouse=True)
def _no_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cuda_timer, "_nvml_handle", lambda device: (None, ()))


def _point(gpu: FakeDevice, *, on_device: bool) -> Point:
    @case(params={"n": [1024]})
    def saxpy(n: int) -> object:
        if on_device:
            gpu.launch()
            return None
        return sum(range(n))  # a NumPy-style fallback: host code

    return points([saxpy])[0]


def test_a_case_that_launches_no_kernel_is_refused_as_timed_host_code() -> None:
    gpu = FakeDevice()
    probe = FakeProbe(0)
    timer = CudaTimer(gpu.torch(), warmup_s=0.0, probe=probe)
    (result,) = run_points([_point(gpu, on_device=False)], lambda: timer, Protocol(rule=RULE))
    assert result.status == "errored" and result.measurement is None
    assert result.error is not None
    assert result.error.startswith(
        "timed host code: saxpy[n=1024] launched no CUDA kernel when checked; it runs on the CPU ("
    )
    assert "--timer wall" in result.error
    assert probe.calls == 1


def test_a_case_that_launches_kernels_is_timed_and_checked_once() -> None:
    gpu = FakeDevice()
    probe = FakeProbe(1)
    timer = CudaTimer(gpu.torch(), warmup_s=0.0, probe=probe)
    timed = run_point(_point(gpu, on_device=True), timer, Protocol(rule=RULE))
    assert timed.status == "ok" and probe.calls == 0  # never while points are being timed
    (result,) = run_points([_point(gpu, on_device=True)], lambda: timer, Protocol(rule=RULE))
    assert result.status == "ok" and len(result.samples) >= 5
    assert probe.calls == 1  # once, after the run's points were timed
    fixed_protocol = Protocol(rule=RULE, seeds=3, repeats=2)
    (fixed,) = run_points([_point(gpu, on_device=True)], lambda: timer, fixed_protocol)
    assert fixed.status == "ok" and len(fixed.samples) == 6 and probe.calls == 2


def test_without_a_profiler_the_case_is_timed_with_a_note() -> None:
    gpu = FakeDevice()
    timer = CudaTimer(gpu.torch(), warmup_s=0.0, probe=FakeProbe(None))
    (result,) = run_points([_point(gpu, on_device=False)], lambda: timer, Protocol(rule=RULE))
    assert result.status == "ok"
    assert any(n.startswith("not checked for CUDA kernels: torch.profiler") for n in result.notes())


def test_interleaved_refusal_names_which_side_ran_host_code() -> None:
    gpu = FakeDevice()
    mine, theirs = _point(gpu, on_device=True), _point(gpu, on_device=False)

    class SideProbe:
        def device_events(self, call: Any) -> int:
            before = gpu.launches
            call()
            return gpu.launches - before

    timer = CudaTimer(gpu.torch(), warmup_s=0.0, probe=SideProbe())
    results, partners = run_interleaved([mine], {mine.key: theirs}, lambda: timer, RULE)
    assert results[0].status == "errored" and partners == {}
    assert results[0].error is not None
    assert results[0].error.startswith(
        "timed host code: saxpy[n=1024] (the build it is compared with) launched no CUDA kernel"
    )


def test_check_launches_raises_or_notes() -> None:
    assert check_launches(FakeProbe(3), lambda: None) == ()
    with pytest.raises(HostCodeTimed, match="timed host code: the case launched no CUDA kernel"):
        check_launches(FakeProbe(0), lambda: None)
    (note,) = check_launches(FakeProbe(None), lambda: None)
    assert "a case that runs on the CPU would not be caught" in note


def test_torch_profiler_probe_counts_device_events() -> None:
    gpu = FakeDevice()
    probe = TorchProfilerProbe(gpu.torch(), environ={})

    def two_kernels() -> None:
        gpu.launch()
        gpu.launch()

    assert probe.device_events(two_kernels) == 2
    assert probe.device_events(lambda: sum(range(10))) == 0


def test_torch_profiler_probe_that_sees_no_known_kernel_is_unavailable() -> None:
    gpu = FakeDevice(profiler_sees_cuda=False)  # CUPTI missing: the profiler records CPU only
    probe = TorchProfilerProbe(gpu.torch(), environ={})
    with pytest.raises(ProfilerUnavailable, match="saw no CUDA activity for a known kernel"):
        probe.device_events(gpu.launch)
    (note,) = check_launches(probe, gpu.launch)  # so nothing is refused
    assert note.startswith("not checked for CUDA kernels")


def test_cupti_is_kept_up_before_cuda_12_6_where_torch_does_the_same() -> None:
    gpu = FakeDevice()
    old: dict[str, str] = {}
    TorchProfilerProbe(gpu.torch(cuda_version="12.4"), environ=old).device_events(gpu.launch)
    assert old == {"DISABLE_CUPTI_LAZY_REINIT": "1", "TEARDOWN_CUPTI": "0"}
    new: dict[str, str] = {}
    TorchProfilerProbe(gpu.torch(cuda_version="13.0"), environ=new).device_events(gpu.launch)
    assert new == {}
