"""Burn-in: run one case over and over for a while and look for memory that keeps growing.

Host RSS (``/proc/self/statm``) and, on CUDA, ``torch.cuda.memory_allocated`` are sampled every
``interval`` seconds. The first tenth of the run is warm-up (caches, allocator arenas) and left
out. A series leaks when its Theil–Sen slope is positive with 95 % confidence (the lower end of
the slope's interval is above zero) AND the growth over the run (slope × duration) exceeds the
tolerance: a trend that is both real and large enough to matter.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cuship import _read
from cuship.bench.registry import Point
from cuship.errors import UsageError

__all__ = ["BurnIn", "Trend", "burn_in", "parse_duration", "rss_bytes", "trend"]

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_SCALE = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """``"90s"``, ``"10m"``, ``"1h"``, ``"2.5"`` (seconds) → seconds."""
    match = _DURATION.match(text)
    if match is None or float(match[1]) <= 0:
        raise UsageError(f"{text!r} is not a duration", hint="write e.g. 90s, 10m or 1h")
    return float(match[1]) * _SCALE[match[2] or "s"]


def rss_bytes(statm: str, page_size: int) -> int:
    """Resident set size from the text of ``/proc/self/statm`` (second field, in pages)."""
    return int(statm.split()[1]) * page_size


def _read_rss() -> int:
    statm = _read.read_bytes("/proc/self/statm", _read.SYSTEM_FILE).decode("ascii", "replace")
    return rss_bytes(statm, os.sysconf("SC_PAGE_SIZE"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Trend:
    """Growth of one memory series: bytes per second, with a 95 % interval."""

    name: str
    slope: float
    low: float
    high: float
    growth: float
    leaking: bool

    def describe(self) -> str:
        mib = self.growth / 2**20
        mark = "GROWING" if self.leaking else "flat"
        return f"{self.name}: {mark}, {self.slope / 1024:+.1f} KiB/s, {mib:+.2f} MiB over the run"


def trend(name: str, times: Sequence[float], values: Sequence[float], tolerance: float) -> Trend:
    """Theil–Sen slope of ``values`` over ``times``; leaking per the module docstring."""
    from scipy.stats import theilslopes

    if len(values) < 4:
        return Trend(name=name, slope=0.0, low=0.0, high=0.0, growth=0.0, leaking=False)
    slope, _intercept, low, high = theilslopes(values, times, alpha=0.95)
    span = times[-1] - times[0]
    growth = float(slope) * span
    leaking = bool(low > 0 and growth > tolerance)
    return Trend(
        name=name,
        slope=float(slope),
        low=float(low),
        high=float(high),
        growth=growth,
        leaking=leaking,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class BurnIn:
    key: str
    duration: float
    calls: int
    times: tuple[float, ...]
    rss: tuple[int, ...]
    gpu: tuple[int, ...]
    trends: tuple[Trend, ...]
    error: str | None = None

    @property
    def leaking(self) -> bool:
        return any(t.leaking for t in self.trends)

    @property
    def exit_code(self) -> int:
        return 1 if self.leaking or self.error else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "duration_s": self.duration,
            "calls": self.calls,
            "error": self.error,
            "leaking": self.leaking,
            "samples": {"t": list(self.times), "rss": list(self.rss), "gpu": list(self.gpu)},
            "trends": [
                {"name": t.name, "slope_bytes_per_s": t.slope, "low": t.low, "high": t.high}
                | {"growth_bytes": t.growth, "leaking": t.leaking}
                for t in self.trends
            ],
        }


def _gpu_reader(torch: Any) -> Callable[[], int] | None:
    if torch is None:
        return None
    return lambda: int(torch.cuda.memory_allocated())


def burn_in(
    point: Point,
    duration: float,
    *,
    tolerance: float = 2**20,
    interval: float | None = None,
    torch: Any = None,
    now: Callable[[], float] = time.perf_counter,
) -> BurnIn:
    """Call ``point`` repeatedly for ``duration`` seconds, sampling memory every ``interval``
    (default: duration / 60, at least 20 ms); ``torch`` (CUDA) adds the GPU memory series."""
    step = interval if interval is not None else max(0.02, duration / 60)
    gpu_now = _gpu_reader(torch)
    times: list[float] = []
    rss: list[int] = []
    gpu: list[int] = []
    calls = 0
    try:
        kwargs = point.case.inputs(point.params, 0)
        start = next_sample = now()
        while (elapsed := now() - start) < duration:
            point.case.fn(**kwargs)
            calls += 1
            if now() >= next_sample:
                times.append(elapsed)
                rss.append(_read_rss())
                gpu.append(gpu_now() if gpu_now else 0)
                next_sample += step
    except Exception as err:
        return BurnIn(
            key=point.key,
            duration=duration,
            calls=calls,
            times=tuple(times),
            rss=tuple(rss),
            gpu=tuple(gpu),
            trends=(),
            error=f"{type(err).__name__}: {err}",
        )
    skip = next((i for i, t in enumerate(times) if t >= duration / 10), len(times))
    series = [("host RSS", rss)] + ([("GPU memory", gpu)] if gpu_now else [])
    trends = tuple(
        trend(name, times[skip:], [float(v) for v in values[skip:]], tolerance)
        for name, values in series
    )
    return BurnIn(
        key=point.key,
        duration=duration,
        calls=calls,
        times=tuple(times),
        rss=tuple(rss),
        gpu=tuple(gpu),
        trends=trends,
    )
