"""What Nsight Compute says about one call of a case: its kernels' time, DRAM traffic, occupancy
and SM throughput, and how cuship's own bandwidth figure compares.

One call may launch several kernels: their durations are summed, and every rate or share is
weighted by duration (for DRAM bytes per second that is exactly total bytes over total time).
Shares are stored as fractions of 1, as cuship's other numbers are; ncu prints percent.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from cuship.bench.ncu.metrics import DURATION, NcuRow

__all__ = [
    "AGREEMENT",
    "CSV_COLUMNS",
    "METRICS",
    "NcuProfile",
    "NcuSession",
    "NcuSet",
    "aggregate",
    "csv_fields",
    "profile_notes",
    "profile_numbers",
    "short_name",
]

NcuSet = Literal["basic", "full"]
# --export csv: a profiled point's ncu figures on each of its sample rows (empty: not profiled)
CSV_COLUMNS = (
    "ncu_kernels",
    "ncu_kernel_time",
    "ncu_dram_bytes_per_s",
    "ncu_dram_peak_fraction",
    "ncu_occupancy_fraction",
    "ncu_sm_fraction",
    "ncu_error",
)

# ncu metric -> (field, the base unit its value must have, scale to cuship's convention)
METRICS: Mapping[str, tuple[str, str, float]] = {
    DURATION: ("kernel_time", "s", 1.0),
    "dram__bytes.sum.per_second": ("dram_bytes_per_s", "B/s", 1.0),
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": ("dram_peak_fraction", "%", 0.01),
    "sm__warps_active.avg.pct_of_peak_sustained_active": ("occupancy_fraction", "%", 0.01),
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": ("sm_fraction", "%", 0.01),
}
AGREEMENT = 0.10  # cuship's bandwidth within 10 % of ncu's DRAM throughput: no note
_RATES = tuple(field for field, _, _ in METRICS.values() if field != "kernel_time")
_NAMES_KEPT = 8


@dataclass(frozen=True, slots=True, kw_only=True)
class NcuSession:
    """How a run was profiled: the metric set, the ncu that did it, where reports were kept."""

    metric_set: NcuSet
    ncu: str
    version: str | None = None
    reports: str | None = None  # directory of the kept .ncu-rep files

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": "ncu",
            "set": self.metric_set,
            "ncu": self.ncu,
            "version": self.version,
            "metrics": list(METRICS),
            "reports": self.reports,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class NcuProfile:
    """One call of one point under ncu; ``error`` set (and no metrics) when that failed."""

    metric_set: NcuSet = "basic"
    kernels: int = 0  # kernel launches in the profiled call
    kernel_names: tuple[str, ...] = ()  # distinct, short, in launch order
    kernel_time: float | None = None  # seconds, summed over the call's kernels
    dram_bytes_per_s: float | None = None
    dram_peak_fraction: float | None = None
    occupancy_fraction: float | None = None  # achieved occupancy
    sm_fraction: float | None = None  # SM throughput, of peak
    report: str | None = None  # the kept .ncu-rep
    wall_time: float | None = None  # seconds the whole ncu run took: its overhead
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def dram_gbps(self) -> float | None:
        return None if self.dram_bytes_per_s is None else self.dram_bytes_per_s / 1e9

    def describe(self) -> str:
        """``"3.73 µs in 1 kernel, DRAM 1210 GB/s (36% of peak), occupancy 62%, SM 12%"``."""
        if not self.ok:
            return f"not profiled: {self.error}"
        parts = []
        if self.kernel_time is not None:
            count = f"{self.kernels} kernel" + ("s" if self.kernels != 1 else "")
            parts.append(f"{self.kernel_time * 1e6:.4g} µs in {count}")
        if self.dram_gbps is not None:
            share = self.dram_peak_fraction
            peak = f" ({share:.0%} of peak)" if share is not None else ""
            parts.append(f"DRAM {self.dram_gbps:.4g} GB/s{peak}")
        for label, value in (("occupancy", self.occupancy_fraction), ("SM", self.sm_fraction)):
            if value is not None:
                parts.append(f"{label} {value:.0%}")
        return ", ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "set": self.metric_set,
            "kernels": self.kernels,
            "kernel_names": list(self.kernel_names),
            "kernel_time": self.kernel_time,
            "dram_bytes_per_s": self.dram_bytes_per_s,
            "dram_peak_fraction": self.dram_peak_fraction,
            "occupancy_fraction": self.occupancy_fraction,
            "sm_fraction": self.sm_fraction,
            "report": self.report,
            "wall_time": self.wall_time,
            "error": self.error,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> NcuProfile:
        """The inverse of :meth:`to_json` (unknown keys ignored, missing ones left empty)."""

        def number(key: str) -> float | None:
            value = data.get(key)
            return float(value) if isinstance(value, int | float) else None

        return cls(
            metric_set="full" if data.get("set") == "full" else "basic",
            kernels=int(data.get("kernels") or 0),
            kernel_names=tuple(str(n) for n in data.get("kernel_names") or ()),
            kernel_time=number("kernel_time"),
            dram_bytes_per_s=number("dram_bytes_per_s"),
            dram_peak_fraction=number("dram_peak_fraction"),
            occupancy_fraction=number("occupancy_fraction"),
            sm_fraction=number("sm_fraction"),
            report=data.get("report") if isinstance(data.get("report"), str) else None,
            wall_time=number("wall_time"),
            error=data.get("error") if isinstance(data.get("error"), str) else None,
        )


def short_name(kernel: str) -> str:
    """``void vectorized_elementwise_kernel<4, ...>(int, T2, T3)`` → the name before its
    template and parameter lists (``vectorized_elementwise_kernel``)."""
    head = kernel.split("(", 1)[0].split("<", 1)[0].strip()
    return head.removeprefix("void ").strip() or kernel[:80]


def _per_kernel(rows: Iterable[NcuRow]) -> dict[int, tuple[str, dict[str, float]]]:
    kernels: dict[int, tuple[str, dict[str, float]]] = {}
    for row in rows:
        spec = METRICS.get(row.metric)
        if spec is None:
            continue
        field, unit, scale = spec
        values = kernels.setdefault(row.id, (row.kernel, {}))[1]
        value, base = row.base
        if base == unit and math.isfinite(value):  # another unit: left out, never guessed
            values[field] = value * scale
    return kernels


def _weighted(values: Sequence[tuple[float, float | None]]) -> float | None:
    """Duration-weighted mean of (value, duration) pairs; a plain mean when durations are
    unknown or zero; None without values."""
    if not values:
        return None
    total = sum(d for _, d in values if d is not None)
    if total > 0 and all(d is not None for _, d in values):
        return sum(v * (d or 0.0) for v, d in values) / total
    return sum(v for v, _ in values) / len(values)


def aggregate(rows: Sequence[NcuRow], *, metric_set: NcuSet = "basic") -> NcuProfile:
    """One call's profile from ncu's rows (every kernel the call launched).

    A call whose rows hold no kernel at all is an error profile ("no kernel profiled").
    """
    kernels = _per_kernel(rows)
    if not kernels:
        return NcuProfile(metric_set=metric_set, error="ncu profiled no kernel in the call")
    times = [values.get("kernel_time") for _, values in kernels.values()]
    known = [t for t in times if t is not None]
    rates: dict[str, float | None] = {}
    for field in _RATES:
        pairs = [
            (values[field], values.get("kernel_time"))
            for _, values in kernels.values()
            if field in values
        ]
        rates[field] = _weighted(pairs)
    names = tuple(dict.fromkeys(short_name(k) for k, _ in kernels.values()))
    return NcuProfile(
        metric_set=metric_set,
        kernels=len(kernels),
        kernel_names=names[:_NAMES_KEPT],
        kernel_time=sum(known) if known else None,
        dram_bytes_per_s=rates["dram_bytes_per_s"],
        dram_peak_fraction=rates["dram_peak_fraction"],
        occupancy_fraction=rates["occupancy_fraction"],
        sm_fraction=rates["sm_fraction"],
    )


def _ratio(ours: float | None, theirs: float | None) -> float | None:
    return ours / theirs if ours is not None and theirs else None


def profile_numbers(
    profile: NcuProfile | None, *, gbps: float | None, peak_bandwidth_fraction: float | None
) -> dict[str, float]:
    """The store's numbers for a profile: ``ncu_kernel_time``, ``ncu_dram_gbps``,
    ``ncu_dram_peak_fraction``, ``ncu_occupancy_fraction``, ``ncu_sm_fraction``,
    ``ncu_kernels``, ``ncu_wall_time`` and the agreement with cuship's own figures:
    ``ncu_bw_ratio`` (cuship's GB/s from its bytes work model over ncu's DRAM GB/s) and
    ``ncu_peak_ratio`` (cuship's share of the datasheet bandwidth over ncu's DRAM % of peak)."""
    if profile is None or not profile.ok:
        return {}
    values = {
        "ncu_kernel_time": profile.kernel_time,
        "ncu_dram_gbps": profile.dram_gbps,
        "ncu_dram_peak_fraction": profile.dram_peak_fraction,
        "ncu_occupancy_fraction": profile.occupancy_fraction,
        "ncu_sm_fraction": profile.sm_fraction,
        "ncu_kernels": float(profile.kernels),
        "ncu_wall_time": profile.wall_time,
        "ncu_bw_ratio": _ratio(gbps, profile.dram_gbps),
        "ncu_peak_ratio": _ratio(peak_bandwidth_fraction, profile.dram_peak_fraction),
    }
    return {k: float(v) for k, v in values.items() if v is not None and math.isfinite(v)}


def profile_notes(profile: NcuProfile | None, numbers: Mapping[str, float]) -> list[str]:
    """A failed profile, and a bandwidth that disagrees with ncu's by more than 10 %."""
    if profile is None:
        return []
    if not profile.ok:
        return [f"ncu: not profiled: {profile.error}"]
    ratio = numbers.get("ncu_bw_ratio")
    if ratio is None or abs(ratio - 1) <= AGREEMENT:
        return []
    return [
        f"ncu: cuship's {numbers.get('gbps', 0.0):.4g} GB/s (bytes work model / cold median) is "
        f"{ratio:.2f}x ncu's DRAM {numbers['ncu_dram_gbps']:.4g} GB/s: launch overhead in the "
        "timed call, cache hits or a work model that counts other bytes"
    ]


def csv_fields(profile: NcuProfile | None) -> tuple[object, ...]:
    """The values of :data:`CSV_COLUMNS` for a point (empty strings where unknown)."""
    if profile is None:
        return ("",) * len(CSV_COLUMNS)
    values: tuple[object, ...] = (
        profile.kernels if profile.ok else None,
        profile.kernel_time,
        profile.dram_bytes_per_s,
        profile.dram_peak_fraction,
        profile.occupancy_fraction,
        profile.sm_fraction,
        profile.error,
    )
    return tuple("" if v is None else repr(v) if isinstance(v, float) else v for v in values)
