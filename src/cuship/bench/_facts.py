"""What a measurement says beside its median: clocks and throttling, the hot per-call time and
whether the case is launch-bound, its share of the GPU's peaks, and the notes that go with them.

One place builds these for every output (text, JSON, CSV, store), so they cannot disagree.
"""

from __future__ import annotations

import math
from typing import Any

from cuship.bench.peak import PeakShare
from cuship.bench.timers.hot import LAUNCH_BOUND_TEXT, launch_bound
from cuship.bench.timers.measure import Measurement

__all__ = [
    "CSV_POINT_COLUMNS",
    "clock_numbers",
    "clocks_json",
    "csv_point_fields",
    "hot_numbers",
    "is_launch_bound",
    "notes",
    "peak_numbers",
    "timing_json",
]

CSV_POINT_COLUMNS = (
    "throttled_fraction",
    "median_sm_clock_mhz",
    "max_sm_clock_mhz",
    "cold_median",
    "hot_per_call",
    "hot_method",
    "launch_bound",
    "bandwidth_peak_fraction",
    "flops_peak_fraction",
)


def _finite(values: dict[str, float | None]) -> dict[str, float]:
    return {k: float(v) for k, v in values.items() if v is not None and math.isfinite(v)}


def clock_numbers(m: Measurement) -> dict[str, float]:
    """throttled_fraction, sm_clock_median_mhz, sm_clock_max_mhz (where known), and
    dropped_samples when throttled samples were left out of the statistics."""
    out = _finite(
        {
            "throttled_fraction": m.throttled_fraction,
            "sm_clock_median_mhz": m.median_clock,
            "sm_clock_max_mhz": float(m.max_clock) if m.max_clock else None,
        }
    )
    if m.drop_throttled:
        out["dropped_samples"] = float(m.dropped)
    return out


def is_launch_bound(m: Measurement | None, cold: float | None) -> bool:
    """True when the hot per-call time is well under the cold median (see hot.launch_bound)."""
    if m is None or m.hot is None or cold is None:
        return False
    return launch_bound(m.hot.per_call, cold)


def hot_numbers(m: Measurement, cold: float | None) -> dict[str, float]:
    """hot_per_call and hot_over_cold (hot per call / cold median)."""
    if m.hot is None:
        return {}
    ratio = m.hot.per_call / cold if cold else None
    return _finite({"hot_per_call": m.hot.per_call, "hot_over_cold": ratio})


def peak_numbers(share: PeakShare | None) -> dict[str, float]:
    if share is None:
        return {}
    return _finite(
        {
            "peak_bandwidth_fraction": share.bandwidth_fraction,
            "peak_flops_fraction": share.flops_fraction,
        }
    )


def clocks_json(m: Measurement) -> dict[str, Any]:
    return {
        "throttled": len(m.throttled),
        "throttled_fraction": m.throttled_fraction,
        "median_mhz": m.median_clock,
        "max_mhz": m.max_clock,
        "drop_throttled": m.drop_throttled,
        "dropped": m.dropped,
        "samples_used": len(m.kept),
    }


def timing_json(m: Measurement, cold: float | None) -> dict[str, Any]:
    """Cold and hot per call side by side, the hot method, and the launch-bound verdict."""
    bound = is_launch_bound(m, cold)
    return {
        "cold_median": cold,
        "hot_per_call": m.hot.per_call if m.hot else None,
        "hot_method": m.hot.method if m.hot else None,
        "hot_calls": m.hot.calls if m.hot else None,
        "hot_samples": list(m.hot.samples) if m.hot else [],
        "launch_bound": bound,
        "explanation": LAUNCH_BOUND_TEXT if bound else None,
    }


def notes(m: Measurement | None, cold: float | None, share: PeakShare | None) -> list[str]:
    """Everything a reader must know to trust the number, in plain words."""
    if m is None:
        return []
    out = list(m.notes)
    if m.drop_throttled and m.throttled:
        out.append(
            f"--drop-throttled: {m.dropped} of {len(m.samples)} samples dropped from the "
            "statistics (SM clock under 0.9 × max)"
        )
    if m.hot is not None and m.hot.note:
        out.append(m.hot.note)
    if is_launch_bound(m, cold) and m.hot is not None and cold:
        out.append(
            f"launch-bound: hot {m.hot.per_call * 1e6:.3g} µs vs cold {cold * 1e6:.3g} µs per "
            f"call; {LAUNCH_BOUND_TEXT}"
        )
    if share is not None and share.note:
        out.append(share.note)
    return out


def csv_point_fields(
    m: Measurement | None, cold: float | None, share: PeakShare | None
) -> tuple[object, ...]:
    """The per-point values of :data:`CSV_POINT_COLUMNS` (empty strings where unknown)."""
    if m is None:
        return ("",) * len(CSV_POINT_COLUMNS)
    values: tuple[object, ...] = (
        m.throttled_fraction,
        m.median_clock,
        m.max_clock,
        cold,
        m.hot.per_call if m.hot else None,
        m.hot.method if m.hot else None,
        int(is_launch_bound(m, cold)) if m.hot else None,
        share.bandwidth_fraction if share else None,
        share.flops_fraction if share else None,
    )
    return tuple("" if v is None else repr(v) if isinstance(v, float) else v for v in values)
