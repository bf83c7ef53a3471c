"""A simulated GPU behind a torch-shaped namespace, for the CUDA timer's pure parts.

The device has a clock that work advances: a call launched on its own costs ``launch_s`` of
device time (what a cold event pair sees for a tiny kernel: launch latency plus the kernel),
the same call inside a CUDA-graph replay costs ``kernel_s``. Events read the clock. A capture
can be made to fail the way a call that synchronises does. ``torch.profiler`` reports one CUDA
event per launch (or none, to play a profiler without CUPTI).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

CUDA, CPU = "DeviceType.CUDA", "DeviceType.CPU"


@dataclass
class FakeGraph:
    device: FakeDevice
    calls: int = 0

    def replay(self) -> None:
        self.device.now += self.calls * self.device.kernel_s
        self.device.replays.append(self.calls)


@dataclass
class FakeDevice:
    launch_s: float = 4e-6
    kernel_s: float = 1e-6
    capture_error: str | None = None
    profiler_sees_cuda: bool = True
    now: float = 0.0
    launches: int = 0
    capturing: FakeGraph | None = None
    replays: list[int] = field(default_factory=list)
    captures: list[int] = field(default_factory=list)
    streams_set: list[object] = field(default_factory=list)

    def launch(self) -> None:
        """What a device-resident case's call does: one kernel."""
        if self.capturing is not None:
            if self.capture_error:
                raise RuntimeError(self.capture_error)
            self.capturing.calls += 1
            return
        self.now += self.launch_s
        self.launches += 1

    def torch(self, cuda_version: str = "13.0") -> Any:
        return fake_torch(self, cuda_version)


def _events(device: FakeDevice) -> Any:
    class Event:
        def __init__(self, enable_timing: bool = False) -> None:
            self.stamp = 0.0

        def record(self, stream: object = None) -> None:
            self.stamp = device.now

        def synchronize(self) -> None:
            return None

        def elapsed_time(self, end: Event) -> float:
            return (end.stamp - self.stamp) * 1e3  # milliseconds, as torch returns them

    return Event


def _cuda(device: FakeDevice) -> SimpleNamespace:
    @contextmanager
    def graph(g: FakeGraph) -> Iterator[None]:
        device.capturing = g
        try:
            yield
        finally:
            device.capturing = None
            device.captures.append(g.calls)

    @contextmanager
    def stream(s: object) -> Iterator[None]:
        yield

    default = SimpleNamespace(wait_stream=lambda other: None, name="default")
    return SimpleNamespace(
        Event=_events(device),
        Stream=lambda: SimpleNamespace(wait_stream=lambda other: None, name="side"),
        stream=stream,
        current_stream=lambda: default,
        set_stream=device.streams_set.append,
        CUDAGraph=lambda: FakeGraph(device),
        graph=graph,
        synchronize=lambda device_index=None: None,
        get_device_properties=lambda index: SimpleNamespace(L2_cache_size=50 * 2**20),
    )


def _profiler(device: FakeDevice) -> SimpleNamespace:
    class Profile:
        def __init__(self, activities: list[str]) -> None:
            self.activities = activities
            self.start = 0

        def __enter__(self) -> Profile:
            self.start = device.launches
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def events(self) -> list[SimpleNamespace]:
            seen = device.launches - self.start if device.profiler_sees_cuda else 0
            return [SimpleNamespace(device_type=CPU)] + [
                SimpleNamespace(device_type=CUDA) for _ in range(seen)
            ]

    activity = SimpleNamespace(CPU="CPU", CUDA="CUDA")
    return SimpleNamespace(profile=Profile, ProfilerActivity=activity)


def fake_torch(gpu: FakeDevice, cuda_version: str = "13.0") -> SimpleNamespace:
    """The parts of torch the CUDA timer, the hot measurement and the probe use;
    ``torch.ones(1, device=...).add_(1)`` launches one kernel (the probe's calibration)."""
    return SimpleNamespace(
        cuda=_cuda(gpu),
        profiler=_profiler(gpu),
        autograd=SimpleNamespace(DeviceType=SimpleNamespace(CUDA=CUDA, CPU=CPU)),
        version=SimpleNamespace(cuda=cuda_version),
        int32="int32",
        empty=lambda n, dtype, device: SimpleNamespace(zero_=lambda: None),
        ones=lambda n, device: SimpleNamespace(add_=lambda value: gpu.launch()),
    )
