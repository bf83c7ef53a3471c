"""Baselines: per (op, engine, dtype) max errors saved as JSON, and the regression gate.

A group regresses when its max abs error exceeds the baseline's by more than ``threshold``
(relative; ``[check] regression_threshold``, 0.1 by default) plus a tiny absolute floor, when
its max rel error exceeds the baseline's times ``rel_factor`` (``[check]
rel_regression_factor``, 2 by default: an epsilon in the wrong place can multiply the relative
error and leave the absolute one inside its threshold), or when it passed in the baseline and
fails now. A baseline is compared only with a run of the same cases: same mode (quick or
thorough) and seed (:func:`require_comparable`).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuship._fs import write_json
from cuship.check.report.results import CheckReport, GroupResult, Regression, json_number
from cuship.errors import InputError, UsageError
from cuship.version import __version__

__all__ = [
    "FORMAT_VERSION",
    "ErrorBaseline",
    "ErrorBaselineEntry",
    "from_report",
    "load",
    "regressions",
    "require_comparable",
    "save",
]

FORMAT_VERSION = 1
# Errors below this never count as a regression (float noise around an exact result).
ABSOLUTE_FLOOR = 1e-12


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorBaselineEntry:
    status: str
    max_abs: float | None
    max_rel: float | None
    cases: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorBaseline:
    """A check run's error figures per group (``--save-baseline``), which a later run's may not
    exceed by more than the regression factors: accuracy, where bench's ``TimingBaseline`` is
    speed."""

    cuship_version: str
    created: float
    seed: int
    quick: bool
    device: str
    entries: Mapping[str, ErrorBaselineEntry]


def from_report(report: CheckReport) -> ErrorBaseline:
    """The baseline of a run: every group that ran (skipped groups have no figures)."""
    entries = {
        g.key: ErrorBaselineEntry(
            status=g.status, max_abs=g.max_abs, max_rel=g.max_rel, cases=len(g.cases)
        )
        for g in report.groups
        if g.status != "skipped"
    }
    return ErrorBaseline(
        cuship_version=__version__,
        created=time.time(),
        seed=report.seed,
        quick=report.quick,
        device=report.device,
        entries=entries,
    )


def save(baseline: ErrorBaseline, path: Path) -> None:
    document = {
        "format": FORMAT_VERSION,
        "kind": "cuship-check-baseline",
        "cuship_version": baseline.cuship_version,
        "created": baseline.created,
        "seed": baseline.seed,
        "quick": baseline.quick,
        "device": baseline.device,
        "entries": {
            key: {
                "status": e.status,
                "max_abs": json_number(e.max_abs),
                "max_rel": json_number(e.max_rel),
                "cases": e.cases,
            }
            for key, e in baseline.entries.items()
        },
    }
    write_json(path, document)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def load(path: Path) -> ErrorBaseline:
    """Read a baseline file; InputError (exit 2) when it is missing, not JSON or of another format."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise InputError(f"cannot read baseline {str(path)!r}: {err.strerror}") from err
    except json.JSONDecodeError as err:
        raise InputError(f"baseline {str(path)!r} is not JSON: {err}") from err
    if not isinstance(raw, dict) or raw.get("format") != FORMAT_VERSION:
        found = raw.get("format") if isinstance(raw, dict) else None
        raise InputError(
            f"baseline {str(path)!r} has format {found!r}, expected {FORMAT_VERSION}",
            hint="write a new one with --save-baseline",
        )
    try:
        entries = {
            str(key): ErrorBaselineEntry(
                status=str(e["status"]),
                max_abs=_float(e.get("max_abs")),
                max_rel=_float(e.get("max_rel")),
                cases=int(e.get("cases", 0)),
            )
            for key, e in raw["entries"].items()
        }
        return ErrorBaseline(
            cuship_version=str(raw.get("cuship_version", "?")),
            created=float(raw.get("created", 0)),
            seed=int(raw.get("seed", 0)),
            quick=bool(raw.get("quick", False)),
            device=str(raw.get("device", "cpu")),
            entries=entries,
        )
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise InputError(f"baseline {str(path)!r} is malformed: {err!r}") from err


def _mode(quick: bool) -> str:
    return "quick" if quick else "thorough"


def require_comparable(baseline: ErrorBaseline, path: Path, *, quick: bool, seed: int) -> None:
    """A baseline of other cases (the other mode, another seed) compares nothing: UsageError."""
    theirs = (_mode(baseline.quick), baseline.seed)
    if theirs == (_mode(quick), seed):
        return
    flags = ("--quick " if quick else "") + f"--seed {seed}"
    raise UsageError(
        f"baseline {str(path)!r} holds a {theirs[0]} run with seed {theirs[1]}; this run is "
        f"{_mode(quick)} with seed {seed}, so its cases are not the baseline's",
        hint=f"write a baseline for this run with {flags} --save-baseline FILE, or run as the "
        f"baseline did ({'--quick ' if baseline.quick else ''}--seed {baseline.seed})",
    )


def _worse(current: float | None, base: float | None, threshold: float) -> bool:
    if current is None or base is None:
        return False
    if math.isnan(current) or math.isinf(current):
        return not math.isinf(base)
    return current > base * (1 + threshold) + ABSOLUTE_FLOOR


def _drift(
    group: GroupResult, base: ErrorBaselineEntry, threshold: float, rel_factor: float
) -> str | None:
    """What got worse than the baseline: max abs error, then max rel error (None: neither)."""
    if _worse(group.max_abs, base.max_abs, threshold):
        return (
            f"max abs error {group.max_abs:.3g} > baseline {base.max_abs:.3g} x (1 + {threshold:g})"
        )
    if _worse(group.max_rel, base.max_rel, rel_factor - 1):
        return f"max rel error {group.max_rel:.3g} > baseline {base.max_rel:.3g} x {rel_factor:g}"
    return None


def regressions(
    report: CheckReport, baseline: ErrorBaseline, threshold: float, rel_factor: float = 2.0
) -> tuple[Regression, ...]:
    """Groups worse than the baseline; groups new since the baseline are not regressions."""
    found = []
    for group in report.groups:
        base = baseline.entries.get(group.key)
        if base is None or group.status == "skipped":
            continue
        if base.status == "passed" and group.status in ("failed", "error"):
            found.append(
                Regression(key=group.key, message=f"passed in the baseline, {group.status} now")
            )
        elif (drift := _drift(group, base, threshold, rel_factor)) is not None:
            found.append(Regression(key=group.key, message=drift))
    return tuple(found)
