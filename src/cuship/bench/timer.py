"""Timers and the stopping rule.

Two timers share one sampling loop:

* :class:`WallTimer` (CPU): ``time.perf_counter_ns`` around a batch of calls, the batch sized so
  one sample lasts at least ``sample_time`` (1 ms by default); a sample is seconds per call.
* :class:`CudaTimer` (GPU, through torch): a CUDA event pair around each call, the L2 cache
  flushed before it by writing a buffer twice the device's L2 size, the SM clock read from NVML
  after it; a sample taken under ``throttle`` × the maximum SM clock is marked throttled.

The stopping rule (:func:`stop_reason`): after ``min_samples`` and ``min_time``, stop when the
relative noise of the median (:func:`rel_noise`) is under the target; else at ``timeout`` or
``max_samples``. Throttled samples are kept but left out of the statistics.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

__all__ = [
    "CudaTimer",
    "Measurement",
    "StopRule",
    "Timer",
    "WallTimer",
    "l2_flush_bytes",
    "measure",
    "measure_fixed",
    "measure_interleaved",
    "rel_noise",
    "stop_reason",
    "throttled_indices",
    "usable",
]

StopReason = Literal["noise-target", "timeout", "max-samples", "fixed"]
Call = Callable[[], object]
# Normal-theory factors: sigma = 1.4826 * MAD, and the median's standard error is
# sqrt(pi / 2) * sigma / sqrt(n).
_MAD_TO_SIGMA = 1.4826
_MEDIAN_SE = math.sqrt(math.pi / 2)


@dataclass(frozen=True, slots=True, kw_only=True)
class StopRule:
    """When adaptive sampling stops (``[bench]`` noise, min_samples, min_time, timeout)."""

    noise: float = 0.005
    min_samples: int = 10
    max_samples: int = 10000
    min_time: float = 0.5
    timeout: float = 15.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Measurement:
    """The samples of one case at one point: seconds per call (or instructions per call)."""

    samples: tuple[float, ...]
    throttled: tuple[int, ...] = ()
    stop_reason: StopReason
    rel_noise: float
    calls_per_sample: int = 1
    unit: Literal["s", "instructions"] = "s"


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    mid = n // 2
    return ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def usable(samples: Sequence[float], throttled: Sequence[int] = ()) -> list[float]:
    """The samples the statistics use: all but the throttled ones (all when every one is)."""
    skip = set(throttled)
    kept = [s for i, s in enumerate(samples) if i not in skip]
    return kept if kept else list(samples)


def rel_noise(samples: Sequence[float]) -> float:
    """Relative noise of the median: its robust standard error over the median,
    ``sqrt(pi/2) * 1.4826 * MAD / (median * sqrt(n))``; inf with fewer than 3 samples."""
    n = len(samples)
    if n < 3:
        return math.inf
    median = _median(samples)
    if median <= 0:
        return math.inf if median < 0 else 0.0
    mad = _median([abs(s - median) for s in samples])
    return _MEDIAN_SE * _MAD_TO_SIGMA * mad / (median * math.sqrt(n))


def stop_reason(
    rule: StopRule,
    samples: Sequence[float],
    elapsed: float,
    noise: Callable[[], float] | None = None,
) -> StopReason | None:
    """Why sampling should stop now, or None to go on; ``noise`` computes the relative noise
    (default: :func:`rel_noise` of ``samples``) and is called only when it decides."""
    if elapsed >= rule.timeout:
        return "timeout"
    if len(samples) >= rule.max_samples:
        return "max-samples"
    if len(samples) < rule.min_samples or elapsed < rule.min_time:
        return None
    level = noise() if noise is not None else rel_noise(samples)
    return "noise-target" if level < rule.noise else None


def l2_flush_bytes(l2_cache_size: int) -> int:
    """Bytes written between timed calls to evict the L2: twice its size (at least 1 MiB)."""
    return max(2 * int(l2_cache_size), 1 << 20)


def throttled_indices(
    clocks: Sequence[int | None], max_clock: int | None, threshold: float = 0.9
) -> tuple[int, ...]:
    """Indices of samples whose SM clock was under ``threshold`` × ``max_clock``."""
    if not max_clock:
        return ()
    floor = threshold * max_clock
    return tuple(i for i, c in enumerate(clocks) if c is not None and c < floor)


class Timer(Protocol):
    """Takes one sample of ``call``: (seconds per call, SM clock in MHz or None)."""

    calls_per_sample: int

    def prepare(self, call: Call) -> None: ...

    def sample(self, call: Call) -> tuple[float, int | None]: ...

    def max_clock(self) -> int | None: ...


class WallTimer:
    """Wall clock; tiny calls are batched so that one sample lasts at least ``sample_time``."""

    def __init__(self, sample_time: float = 0.001, clock: Callable[[], int] = time.perf_counter_ns):
        self.sample_time = sample_time
        self.clock = clock
        self.calls_per_sample = 1

    def _batch(self, call: Call, calls: int) -> float:
        enabled = gc.isenabled()
        gc.disable()
        try:
            start = self.clock()
            for _ in range(calls):
                call()
            return (self.clock() - start) / 1e9
        finally:
            if enabled:
                gc.enable()

    def prepare(self, call: Call) -> None:
        """Warm up and size the batch: double the calls until a batch lasts ``sample_time``."""
        calls = 1
        spent = self._batch(call, calls)
        while spent < self.sample_time and calls < 1 << 30:
            calls *= 2 if spent <= 0 else max(2, min(100, math.ceil(self.sample_time / spent)))
            spent = self._batch(call, calls)
        self.calls_per_sample = calls

    def sample(self, call: Call) -> tuple[float, int | None]:
        return self._batch(call, self.calls_per_sample) / self.calls_per_sample, None

    def max_clock(self) -> int | None:
        return None


class CudaTimer:
    """CUDA events around each call, L2 flushed before it, SM clock from NVML after it."""

    def __init__(self, torch: Any, device: int = 0, warmup_s: float = 0.05) -> None:
        self.torch = torch
        self.device = device
        self.warmup_s = warmup_s
        self.calls_per_sample = 1
        props = torch.cuda.get_device_properties(device)
        size = l2_flush_bytes(int(props.L2_cache_size))
        self.flush = torch.empty(size // 4, dtype=torch.int32, device=f"cuda:{device}")
        self._nvml = _nvml_handle(device)
        self._max_clock = self._read_max_clock()  # a constant: asked once, not per sample

    def prepare(self, call: Call) -> None:
        sync = self.torch.cuda.synchronize
        start = time.perf_counter()
        call()
        sync()
        while time.perf_counter() - start < self.warmup_s:
            call()
            sync()

    def sample(self, call: Call) -> tuple[float, int | None]:
        cuda = self.torch.cuda
        begin, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
        self.flush.zero_()
        begin.record()
        call()
        end.record()
        end.synchronize()
        return begin.elapsed_time(end) / 1e3, self._clock()

    def _clock(self) -> int | None:
        if self._nvml is None:
            return None
        import pynvml

        return int(pynvml.nvmlDeviceGetClockInfo(self._nvml, pynvml.NVML_CLOCK_SM))

    def max_clock(self) -> int | None:
        return self._max_clock

    def _read_max_clock(self) -> int | None:
        if self._nvml is None:
            return None
        import pynvml

        return int(pynvml.nvmlDeviceGetMaxClockInfo(self._nvml, pynvml.NVML_CLOCK_SM))


def _nvml_handle(device: int) -> Any:
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml.nvmlDeviceGetHandleByIndex(device)
    except Exception:
        return None


class _Series:
    """Samples of one call as they come, with the clock of each."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self.clocks: list[int | None] = []
        self._checked = 0
        self._noise = math.inf

    def add(self, value: float, clock: int | None) -> None:
        self.samples.append(value)
        self.clocks.append(clock)

    def noise(self, max_clock: int | None) -> float:
        # Recomputed when the series has grown by a tenth: the median costs O(n).
        n = len(self.samples)
        if n - self._checked >= max(1, self._checked // 10):
            kept = usable(self.samples, throttled_indices(self.clocks, max_clock))
            self._noise, self._checked = rel_noise(kept), n
        return self._noise

    def done(self, rule: StopRule, elapsed: float, max_clock: int | None) -> StopReason | None:
        return stop_reason(rule, self.samples, elapsed, lambda: self.noise(max_clock))

    def result(self, timer: Timer, reason: StopReason) -> Measurement:
        throttled = throttled_indices(self.clocks, timer.max_clock())
        return Measurement(
            samples=tuple(self.samples),
            throttled=throttled,
            stop_reason=reason,
            rel_noise=rel_noise(usable(self.samples, throttled)),
            calls_per_sample=timer.calls_per_sample,
        )


def measure(
    timer: Timer, call: Call, rule: StopRule, now: Callable[[], float] = time.perf_counter
) -> Measurement:
    """Sample ``call`` until the stopping rule says so."""
    timer.prepare(call)
    series = _Series()
    start = now()
    while True:
        series.add(*timer.sample(call))
        reason = series.done(rule, now() - start, timer.max_clock())
        if reason is not None:
            return series.result(timer, reason)


def measure_fixed(timer: Timer, calls: Sequence[Call], repeats: int) -> Measurement:
    """The fixed protocol: ``repeats`` samples of each call (one call per seed), in order."""
    series = _Series()
    for call in calls:
        timer.prepare(call)
        for _ in range(repeats):
            series.add(*timer.sample(call))
    return series.result(timer, "fixed")


def measure_interleaved(
    timer: Timer,
    first: Call,
    second: Call,
    rule: StopRule,
    now: Callable[[], float] = time.perf_counter,
) -> tuple[Measurement, Measurement]:
    """A/B: alternate samples of two calls in one process, so drift hits both alike.

    Both use the batch size sized for ``first``; sampling stops when both meet the rule.
    """
    timer.prepare(second)
    timer.prepare(first)
    a, b = _Series(), _Series()
    start = now()
    while True:
        a.add(*timer.sample(first))
        b.add(*timer.sample(second))
        elapsed = now() - start
        ra, rb = a.done(rule, elapsed, timer.max_clock()), b.done(rule, elapsed, timer.max_clock())
        if ra is not None and rb is not None:
            return a.result(timer, ra), b.result(timer, rb)
        if elapsed >= rule.timeout:
            return a.result(timer, "timeout"), b.result(timer, "timeout")
