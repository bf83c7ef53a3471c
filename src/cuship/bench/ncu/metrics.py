"""Reading Nsight Compute's CSV: every kernel's metrics, in the units ncu printed and in base units.

``ncu --csv --metrics A,B PROGRAM`` prints ``==PROF==`` lines (and whatever the program prints),
then one header row and one row per kernel × metric (the *details* page: ``"Metric Name"``,
``"Metric Unit"``, ``"Metric Value"`` columns), values quoted and numbers written with
thousands separators (``"7,520"`` ns). ``ncu --import REPORT --csv --page raw`` prints the *raw*
page instead: one column per metric, a row of units under the header, one row per kernel. Both
are read here. Problems ncu reports come on ``==ERROR==`` / ``==WARNING==`` lines
(``==ERROR== ERR_NVGPUCTRPERM - The user does not have permission ...``).
"""

from __future__ import annotations

import csv
import math
import re
import statistics
from collections.abc import Collection, Sequence
from dataclasses import dataclass

__all__ = [
    "DURATION",
    "NcuRow",
    "base_value",
    "median_duration",
    "ncu_messages",
    "parse_ncu_csv",
    "parse_ncu_metrics",
]

DURATION = "gpu__time_duration.sum"
_UNITS = {
    "ns": 1e-9, "nsecond": 1e-9, "nanosecond": 1e-9,
    "us": 1e-6, "usecond": 1e-6, "µs": 1e-6, "microsecond": 1e-6,
    "ms": 1e-3, "msecond": 1e-3, "millisecond": 1e-3,
    "s": 1.0, "second": 1.0,
}  # fmt: skip
_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15}
_BYTES = re.compile(r"(?P<prefix>[kmgtp]?)(?:byte|b)", re.IGNORECASE)
_RATE = re.compile(r"(?P<prefix>[kmgtp]?)(?:byte|b)/(?:second|sec|s)", re.IGNORECASE)
_MESSAGE = re.compile(r"^==(?P<level>ERROR|WARNING|PROF)==\s*(?P<text>.*)$")


def base_value(value: float, unit: str) -> tuple[float, str]:
    """``value`` in its base unit: seconds (``"s"``), bytes per second (``"B/s"``), bytes
    (``"B"``) or percent (``"%"``); other units are returned as they are."""
    name = unit.strip()
    scale = _UNITS.get(name.lower())
    if scale is not None:
        return value * scale, "s"
    if match := _RATE.fullmatch(name):
        return value * _PREFIX[match["prefix"].lower()], "B/s"
    if match := _BYTES.fullmatch(name):
        return value * _PREFIX[match["prefix"].lower()], "B"
    return value, name


@dataclass(frozen=True, slots=True, kw_only=True)
class NcuRow:
    """One kernel's value of one metric, as ncu printed it."""

    id: int
    kernel: str
    metric: str
    unit: str
    value: float

    @property
    def seconds(self) -> float:
        """The value in seconds (a duration metric); ValueError for another unit."""
        value, unit = base_value(self.value, self.unit)
        if unit != "s":
            raise ValueError(f"{self.metric} is in {self.unit!r}, not a time unit")
        return value

    @property
    def base(self) -> tuple[float, str]:
        """(value, unit) in the base unit (see :func:`base_value`)."""
        return base_value(self.value, self.unit)


def _number(text: str) -> float:
    try:
        return float(text.strip().replace(",", ""))
    except ValueError:
        return math.nan  # "n/a", an empty cell


def _header(lines: Sequence[str]) -> int:
    """The table's header: the first quoted CSV line naming a ``"Kernel Name"`` column."""
    for i, line in enumerate(lines):
        if line.startswith('"') and '"Kernel Name"' in line:
            return i
    raise ValueError('no ncu CSV header (a line naming a "Kernel Name" column) in the output')


def _long(lines: Sequence[str], wanted: Collection[str] | None) -> list[NcuRow]:
    rows = []
    for row in csv.DictReader(lines):
        ident = (row.get("ID") or "").strip()
        metric = row.get("Metric Name") or ""
        if not ident.isdigit() or (wanted is not None and metric not in wanted):
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
    return rows


def _wide(lines: Sequence[str], wanted: Collection[str] | None) -> list[NcuRow]:
    """The raw page: metric names as columns (they hold ``__``), their units on the next row."""
    reader = csv.reader(lines)
    header = next(reader)
    units = next(reader, [])
    columns = [
        (i, name)
        for i, name in enumerate(header)
        if "__" in name and (wanted is None or name in wanted)
    ]
    has_id = "ID" in header
    kernel_at = header.index("Kernel Name") if "Kernel Name" in header else None
    rows = []
    for index, cells in enumerate(reader):
        if len(cells) != len(header):
            continue  # program output after the table
        ident = cells[header.index("ID")].strip() if has_id else str(index)
        if not ident.isdigit():
            continue
        kernel = cells[kernel_at] if kernel_at is not None else ""
        for i, name in columns:
            unit = units[i] if i < len(units) else ""
            rows.append(
                NcuRow(
                    id=int(ident), kernel=kernel, metric=name, unit=unit, value=_number(cells[i])
                )
            )
    return rows


def parse_ncu_metrics(text: str, metrics: Collection[str] | None = None) -> tuple[NcuRow, ...]:
    """Every row of ``metrics`` (all metrics when None) in ncu's CSV, details or raw page, in
    kernel order.

    Raises ValueError when the text holds no ncu CSV header (ncu failed, or profiled nothing).
    """
    lines = text.splitlines()
    start = _header(lines)
    header = next(csv.reader([lines[start]]))
    read = _long if "Metric Name" in header else _wide
    return tuple(read(lines[start:], None if metrics is None else frozenset(metrics)))


def parse_ncu_csv(text: str, metric: str = DURATION) -> tuple[NcuRow, ...]:
    """The rows of ``metric`` in ncu's ``--csv`` output, in kernel order.

    Raises ValueError when the text holds no ncu CSV header (ncu failed, or profiled nothing).
    """
    return parse_ncu_metrics(text, (metric,))


def ncu_messages(text: str, level: str = "ERROR") -> tuple[str, ...]:
    """The text of ncu's ``==ERROR==`` lines (or ``==WARNING==``, ``==PROF==``), in order."""
    found = []
    for line in text.splitlines():
        match = _MESSAGE.match(line.strip())
        if match and match["level"] == level and match["text"]:
            found.append(match["text"])
    return tuple(found)


def median_duration(rows: Sequence[NcuRow], kernel_contains: str = "") -> float | None:
    """Median seconds of the rows whose kernel name contains ``kernel_contains``; None if none."""
    picked = [r.seconds for r in rows if kernel_contains in r.kernel]
    return statistics.median(picked) if picked else None
