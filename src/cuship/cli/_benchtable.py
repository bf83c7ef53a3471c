"""``cuship bench``'s table: a point's cells as the terminal shows them (and GitHub's step
summary)."""

from __future__ import annotations

from typing import Any

__all__ = ["COLUMNS", "NCU_COLUMNS", "point_row"]


def _fmt_time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if seconds >= scale or unit == "ns":
            return f"{seconds / scale:.4g} {unit}"
    return f"{seconds:.3g} s"  # pragma: no cover - the loop always returns


def _throughput(numbers: dict[str, float]) -> str:
    parts = []
    for name, unit in (("gbps", "GB/s"), ("tflops", "TFLOP/s"), ("ops_per_s", "ops/s")):
        if name in numbers:
            parts.append(f"{numbers[name]:.4g} {unit}")
    return ", ".join(parts)


def _peak_text(result: Any) -> str:
    share = result.peak
    if share is None:
        return ""
    parts = []
    if share.bandwidth_fraction is not None:
        parts.append(f"{share.bandwidth_fraction:.0%} BW")
    if share.flops_fraction is not None:
        assumed = " (fp32 assumed)" if share.dtype_origin == "assumed" else ""
        parts.append(f"{share.flops_fraction:.0%} {share.precision}{assumed}")
    return ", ".join(parts)


def _hot_text(result: Any) -> str:
    m = result.measurement
    if m is None or m.hot is None:
        return ""
    text = f"{_fmt_time(m.hot.per_call)} ({m.hot.method})"
    return text + (" LAUNCH-BOUND" if result.launch_bound else "")


def _clock_text(result: Any) -> str:
    m = result.measurement
    if m is None or m.throttled_fraction is None:
        return ""
    clock = f", {m.median_clock:.0f}/{m.max_clock} MHz" if m.median_clock is not None else ""
    dropped = f", {m.dropped} dropped" if m.dropped else ""
    return f"{m.throttled_fraction:.0%} throttled{clock}{dropped}"


def _median_text(result: Any) -> str:
    numbers = result.numbers()
    if not numbers:
        return "-"
    unit = result.measurement.unit
    median = numbers["median"]
    text = _fmt_time(median) if unit == "s" else f"{median:.6g} Ir"
    noise = numbers.get("rel_noise")
    return text + (f" ± {noise * 100:.2f}%" if noise is not None and unit == "s" else "")


def _ncu_text(result: Any) -> str:
    profile = result.profile
    if profile is None:
        return "" if result.measurement is None else "-"
    return profile.describe() if profile.ok else "NOT PROFILED (see notes)"


def _agreement_text(result: Any) -> str:
    numbers = result.numbers()
    parts = []
    if "ncu_bw_ratio" in numbers:
        parts.append(f"{numbers['ncu_bw_ratio']:.2f}x GB/s")
    if "ncu_peak_ratio" in numbers:
        parts.append(f"{numbers['ncu_peak_ratio']:.2f}x % of peak")
    return ", ".join(parts)


def point_row(result: Any, profiled: bool = False) -> list[str]:
    """A point's row: :data:`COLUMNS`, and :data:`NCU_COLUMNS` when ``profiled``."""
    m = result.measurement
    verdict = result.comparison.describe() if result.comparison else ""
    if result.floor is not None:
        verdict = "; ".join(v for v in (verdict, result.floor.describe()) if v)
    if result.error:
        verdict = result.error
    params = ", ".join(f"{k}={v}" for k, v in result.params.items())
    throughput = ", ".join(t for t in (_throughput(result.numbers()), _peak_text(result)) if t)
    cells = [
        result.case,
        params,
        _median_text(result),
        _hot_text(result),
        throughput,
        str(len(m.samples)) if m else "0",
        _clock_text(result),
        m.stop_reason if m else result.status,
        verdict,
    ]
    return cells + ([_ncu_text(result), _agreement_text(result)] if profiled else [])


COLUMNS = (
    "case",
    "params",
    "median ± noise",
    "hot / call",
    "throughput, % of peak",
    "samples",
    "SM clock",
    "stop",
    "verdict",
)
NCU_COLUMNS = ("ncu: kernel time, DRAM, occupancy, SM", "cuship BW / ncu DRAM")
