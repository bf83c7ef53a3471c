"""Timers and the stopping rule.

Two timers share one sampling loop:

* :class:`WallTimer` (CPU): ``time.perf_counter_ns`` around a batch of calls, the batch sized so
  one sample lasts at least ``sample_time`` (1 ms by default); a sample is seconds per call.
* :class:`~cuship.bench.timers.cuda.CudaTimer` (GPU, through torch): a CUDA event pair around each
  call, the L2 flushed before it ("cold"), the SM clock read from NVML after it; a sample taken
  under ``throttle`` × the maximum SM clock is marked throttled. After the cold samples it times
  N back-to-back calls ("hot", :mod:`cuship.bench.timers.hot`).

The stopping rule (:func:`stop_reason`): after ``min_samples`` and ``min_time``, stop when the
relative noise of the median (:func:`rel_noise`) is under the target; else at ``timeout`` or
``max_samples``. Every sample is kept and used: throttled samples are counted, and left out of
the statistics only when the rule says ``drop_throttled`` (``cuship bench --drop-throttled``).
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from cuship.bench.timers.hot import Hot

__all__ = [
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
    """When adaptive sampling stops (``[bench]`` noise, min_samples, min_time, timeout), and
    whether the noise it targets leaves throttled samples out (``drop_throttled``)."""

    noise: float = 0.005
    min_samples: int = 10
    max_samples: int = 10000
    min_time: float = 0.5
    timeout: float = 15.0
    drop_throttled: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Measurement:
    """The samples of one case at one point: seconds per call (or instructions per call).

    ``clocks`` holds the SM clock (MHz) read after each sample (None where unknown) and
    ``max_clock`` the GPU's maximum; ``throttled`` indexes the samples under the threshold.
    ``drop_throttled`` records whether the statistics leave those out; ``hot`` is the per-call
    time of back-to-back calls (CUDA timer only); ``notes`` say what the timer could not check.
    """

    samples: tuple[float, ...]
    throttled: tuple[int, ...] = ()
    stop_reason: StopReason
    rel_noise: float
    calls_per_sample: int = 1
    unit: Literal["s", "instructions"] = "s"
    clocks: tuple[int | None, ...] = ()
    max_clock: int | None = None
    drop_throttled: bool = False
    hot: Hot | None = None
    notes: tuple[str, ...] = ()

    @property
    def kept(self) -> list[float]:
        """The samples the statistics use: all, unless throttled ones are dropped."""
        return usable(self.samples, self.throttled, drop_throttled=self.drop_throttled)

    @property
    def dropped(self) -> int:
        """How many samples the statistics leave out (0 unless ``drop_throttled``)."""
        return len(self.samples) - len(self.kept)

    @property
    def throttled_fraction(self) -> float | None:
        """Share of samples taken under the clock threshold; None when clocks were not read."""
        if not self.samples or not self.max_clock:
            return None
        return len(self.throttled) / len(self.samples)

    @property
    def median_clock(self) -> float | None:
        """Median SM clock (MHz) over the samples whose clock was read."""
        known = [c for c in self.clocks if c is not None]
        return _median(known) if known else None


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    mid = n // 2
    return ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def usable(
    samples: Sequence[float], throttled: Sequence[int] = (), *, drop_throttled: bool = False
) -> list[float]:
    """The samples the statistics use: every one, or with ``drop_throttled`` all but the
    throttled ones (all when every one is throttled)."""
    if not drop_throttled:
        return list(samples)
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
    """Takes one sample of ``call``: (seconds per call, SM clock in MHz or None).

    ``prepare`` warms the call up; ``check`` builds the call (``make_call``: the case's setup
    runs again) when it has something to check and runs it once more, to see whether it can be
    timed as asked (it raises when not, and returns notes on what it could not check): the
    runner calls it for every point after all points are timed, because the CUDA timer's check
    profiles the call and the profiler leaves every later kernel launch of the process slower
    (on an H100, a 100-call CUDA graph of 4,096-float adds went from 1.27 to 1.80 µs per call);
    ``hot`` times back-to-back calls after the samples (None: not measured).
    """

    calls_per_sample: int

    def prepare(self, call: Call) -> None: ...

    def check(self, make_call: Callable[[], Call]) -> tuple[str, ...]: ...

    def sample(self, call: Call) -> tuple[float, int | None]: ...

    def hot(self, call: Call, per_call: float) -> Hot | None: ...

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

    def check(self, make_call: Callable[[], Call]) -> tuple[str, ...]:
        return ()  # wall-clock time is what it is: nothing to check, no inputs to build

    def sample(self, call: Call) -> tuple[float, int | None]:
        return self._batch(call, self.calls_per_sample) / self.calls_per_sample, None

    def hot(self, call: Call, per_call: float) -> Hot | None:
        return None  # a wall-clock sample is already a batch of back-to-back calls

    def max_clock(self) -> int | None:
        return None


class _Series:
    """Samples of one call as they come, with the clock of each."""

    def __init__(self, drop_throttled: bool = False) -> None:
        self.samples: list[float] = []
        self.clocks: list[int | None] = []
        self.drop_throttled = drop_throttled
        self._checked = 0
        self._noise = math.inf

    def add(self, value: float, clock: int | None) -> None:
        self.samples.append(value)
        self.clocks.append(clock)

    def kept(self, max_clock: int | None) -> list[float]:
        throttled = throttled_indices(self.clocks, max_clock)
        return usable(self.samples, throttled, drop_throttled=self.drop_throttled)

    def noise(self, max_clock: int | None) -> float:
        # Recomputed when the series has grown by a tenth: the median costs O(n).
        n = len(self.samples)
        if n - self._checked >= max(1, self._checked // 10):
            self._noise, self._checked = rel_noise(self.kept(max_clock)), n
        return self._noise

    def done(self, rule: StopRule, elapsed: float, max_clock: int | None) -> StopReason | None:
        return stop_reason(rule, self.samples, elapsed, lambda: self.noise(max_clock))

    def result(
        self,
        timer: Timer,
        reason: StopReason,
        hot_call: Call | None = None,
        notes: tuple[str, ...] = (),
    ) -> Measurement:
        top = timer.max_clock()
        kept = self.kept(top)
        hot, hot_notes = _hot(timer, hot_call, _median(kept)) if hot_call else (None, ())
        return Measurement(
            samples=tuple(self.samples),
            throttled=throttled_indices(self.clocks, top),
            stop_reason=reason,
            rel_noise=rel_noise(kept),
            calls_per_sample=timer.calls_per_sample,
            clocks=tuple(self.clocks),
            max_clock=top,
            drop_throttled=self.drop_throttled,
            hot=hot,
            notes=notes + hot_notes,
        )


def _hot(timer: Timer, call: Call, per_call: float) -> tuple[Hot | None, tuple[str, ...]]:
    """The hot measurement, or a note saying why there is none: the cold samples stand."""
    try:
        return timer.hot(call, per_call), ()
    except Exception as err:  # any failure of the extra measurement must not lose the samples
        return None, (f"hot measurement failed: {type(err).__name__}: {err}",)


def measure(
    timer: Timer, call: Call, rule: StopRule, now: Callable[[], float] = time.perf_counter
) -> Measurement:
    """Sample ``call`` until the stopping rule says so, then time it hot."""
    timer.prepare(call)
    series = _Series(rule.drop_throttled)
    start = now()
    while True:
        series.add(*timer.sample(call))
        reason = series.done(rule, now() - start, timer.max_clock())
        if reason is not None:
            return series.result(timer, reason, call)


def measure_fixed(
    timer: Timer, calls: Sequence[Call], repeats: int, *, drop_throttled: bool = False
) -> Measurement:
    """The fixed protocol: ``repeats`` samples of each call (one call per seed), in order;
    the first call is timed hot after the last sample."""
    series = _Series(drop_throttled)
    for call in calls:
        timer.prepare(call)
        for _ in range(repeats):
            series.add(*timer.sample(call))
    return series.result(timer, "fixed", calls[0] if calls else None)


def measure_interleaved(
    timer: Timer,
    first: Call,
    second: Call,
    rule: StopRule,
    now: Callable[[], float] = time.perf_counter,
) -> tuple[Measurement, Measurement]:
    """A/B: alternate samples of two calls in one process, so drift hits both alike.

    Both use the batch size sized for ``first``; sampling stops when both meet the rule.
    Only ``first`` is timed hot; the runner checks both afterwards.
    """
    timer.prepare(second)
    timer.prepare(first)
    a, b = _Series(rule.drop_throttled), _Series(rule.drop_throttled)
    start = now()
    while True:
        a.add(*timer.sample(first))
        b.add(*timer.sample(second))
        elapsed = now() - start
        ra, rb = a.done(rule, elapsed, timer.max_clock()), b.done(rule, elapsed, timer.max_clock())
        if ra is not None and rb is not None:
            return a.result(timer, ra, first), b.result(timer, rb, None)
