"""Reading Nsight Compute's CSV: the kernel's own duration, to check a timer against.

``ncu --metrics gpu__time_duration.sum --csv PROGRAM`` prints ``==PROF==`` lines (and whatever
the program prints), then one header row and one row per kernel × metric, values quoted and
numbers written with thousands separators (``"7,520"`` ns).
"""

from __future__ import annotations

import csv
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["DURATION", "NcuRow", "median_duration", "parse_ncu_csv"]

DURATION = "gpu__time_duration.sum"
_UNITS = {
    "ns": 1e-9, "nsecond": 1e-9, "nanosecond": 1e-9,
    "us": 1e-6, "usecond": 1e-6, "µs": 1e-6, "microsecond": 1e-6,
    "ms": 1e-3, "msecond": 1e-3, "millisecond": 1e-3,
    "s": 1.0, "second": 1.0,
}  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class NcuRow:
    """One kernel's value of one metric."""

    id: int
    kernel: str
    metric: str
    unit: str
    value: float

    @property
    def seconds(self) -> float:
        """The value in seconds (a duration metric); ValueError for another unit."""
        scale = _UNITS.get(self.unit.strip().lower())
        if scale is None:
            raise ValueError(f"{self.metric} is in {self.unit!r}, not a time unit")
        return self.value * scale


def _number(text: str) -> float:
    return float(text.strip().replace(",", ""))


def parse_ncu_csv(text: str, metric: str = DURATION) -> tuple[NcuRow, ...]:
    """The rows of ``metric`` in ncu's ``--csv`` output, in kernel order.

    Raises ValueError when the text holds no ncu CSV header (ncu failed, or profiled nothing).
    """
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if start is None:
        raise ValueError("no ncu CSV header (a line starting with '\"ID\",') in the output")
    rows = []
    for row in csv.DictReader(lines[start:]):
        ident = (row.get("ID") or "").strip()
        if not ident.isdigit() or row.get("Metric Name") != metric:
            continue  # program output after the header, or another metric
        rows.append(
            NcuRow(
                id=int(ident),
                kernel=row.get("Kernel Name") or "",
                metric=metric,
                unit=row.get("Metric Unit") or "",
                value=_number(row.get("Metric Value") or "nan"),
            )
        )
    return tuple(rows)


def median_duration(rows: Sequence[NcuRow], kernel_contains: str = "") -> float | None:
    """Median seconds of the rows whose kernel name contains ``kernel_contains``; None if none."""
    picked = [r.seconds for r in rows if kernel_contains in r.kernel]
    return statistics.median(picked) if picked else None
