"""What a bench run produced: per-point results, the run's verdict, store rows and exports.

The store layout (one ``RunRecord`` of kind ``bench``, one ``ResultRow`` per case × parameter
point) and the JSON export (``format: cuship-bench/1``) follow the bench/dashboard contract.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from cuship.bench import _facts
from cuship.bench.ncu import profile as _profile
from cuship.bench.ncu.profile import NcuProfile, NcuSession, profile_notes, profile_numbers
from cuship.bench.peak import PeakShare
from cuship.bench.stats import Comparison, summarize
from cuship.bench.timers.measure import Measurement
from cuship.provenance import Provenance

__all__ = [
    "CSV_COLUMNS",
    "FORMAT",
    "BenchReport",
    "FloorCheck",
    "PointResult",
    "export",
    "export_name",
    "sample_seed",
    "to_csv",
    "to_json",
]

FORMAT = "cuship-bench/1"
CSV_COLUMNS = (
    "run_id",
    "machine_id",
    "key",
    "case",
    "params",
    "status",
    "sample",
    "seed",
    "value",
    "unit",
    "throttled",
    "sm_clock_mhz",
    "used",
    *_facts.CSV_POINT_COLUMNS,
    *_profile.CSV_COLUMNS,
)
Status = Literal["ok", "errored", "unsure"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FloorCheck:
    """A throughput floor applied to one point: ``"H100 = 5000 ops/s"`` vs what was measured."""

    machine: str
    floor: float
    unit: str
    measured: float | None

    @property
    def missed(self) -> bool:
        return self.measured is None or self.measured < self.floor

    def describe(self) -> str:
        got = "not measured" if self.measured is None else f"{self.measured:.4g} {self.unit}"
        mark = "MISSED" if self.missed else "met"
        return f"floor {self.floor:g} {self.unit} ({self.machine}): {mark}, {got}"


@dataclass(frozen=True, slots=True, kw_only=True)
class PointResult:
    """One case at one parameter point."""

    key: str
    case: str
    params: Mapping[str, Any]
    status: Status
    measurement: Measurement | None
    work: Mapping[str, float | None] = field(default_factory=dict)
    error: str | None = None
    comparison: Comparison | None = None
    floor: FloorCheck | None = None
    peak: PeakShare | None = None
    profile: NcuProfile | None = None  # --profile ncu: one call of the point under ncu

    @property
    def samples(self) -> tuple[float, ...]:
        return self.measurement.samples if self.measurement else ()

    @property
    def kept(self) -> list[float]:
        """The samples the statistics use: all, unless --drop-throttled left some out."""
        return self.measurement.kept if self.measurement else []

    @property
    def cold(self) -> float | None:
        """The cold median per call (seconds), the headline number; None without samples."""
        if not self.kept or self.measurement is None or self.measurement.unit != "s":
            return None
        return summarize(self.kept).median

    @property
    def launch_bound(self) -> bool:
        """Hot per call well under cold: the cold time is mostly launch latency."""
        return _facts.is_launch_bound(self.measurement, self.cold)

    def notes(self) -> list[str]:
        """What a reader must know to trust this result (dropped samples, hot method,
        launch-bound, unchecked host code, an assumed dtype, a profile that failed or whose
        DRAM throughput disagrees with cuship's bandwidth)."""
        notes = _facts.notes(self.measurement, self.cold, self.peak)
        return notes + profile_notes(self.profile, self.numbers())

    def numbers(self) -> dict[str, float]:
        """median, mean, min, stdev, rel_noise, the throughputs the work model allows, the
        clocks, the hot per-call time, the shares of the GPU's peaks and, when profiled, ncu's
        figures with their agreement (see :func:`~cuship.bench.ncu.profile.profile_numbers`)."""
        if not self.kept:
            return {}
        s = summarize(self.kept)
        assert self.measurement is not None
        out = {
            "median": s.median,
            "mean": s.mean,
            "min": s.min,
            "stdev": s.stdev,
            "rel_noise": self.measurement.rel_noise,
        }
        if self.measurement.unit == "s" and s.median > 0:
            for name, scale, work in (
                ("gbps", 1e9, "bytes"),
                ("tflops", 1e12, "flops"),
                ("ops_per_s", 1.0, "ops"),
            ):
                amount = self.work.get(work)
                if amount is not None:
                    out[name] = amount / s.median / scale
        m = self.measurement
        out |= _facts.clock_numbers(m) | _facts.hot_numbers(m, self.cold)
        out |= _facts.peak_numbers(self.peak)
        out |= profile_numbers(
            self.profile,
            gbps=out.get("gbps"),
            peak_bandwidth_fraction=out.get("peak_bandwidth_fraction"),
        )
        return {k: v for k, v in out.items() if math.isfinite(v)}

    def payload(self) -> dict[str, Any]:
        """The stored row's payload; ``ncu`` only when the point was profiled."""
        m = self.measurement
        payload = {
            "case": self.case,
            "params": dict(self.params),
            "unit": m.unit if m else "s",
            "samples": list(m.samples) if m else [],
            "throttled": list(m.throttled) if m else [],
            "work": {k: self.work.get(k) for k in ("bytes", "flops", "ops")},
            "rel_noise": m.rel_noise if m and math.isfinite(m.rel_noise) else None,
            "stop_reason": m.stop_reason if m else None,
            "error": self.error,
            "clocks": list(m.clocks) if m else [],
            "max_clock_mhz": m.max_clock if m else None,
            "drop_throttled": m.drop_throttled if m else False,
            "hot": m.hot.to_json() if m and m.hot else None,
            "peak": self.peak.to_json() if self.peak else None,
            "notes": self.notes(),
        }
        if self.profile is not None:
            payload["ncu"] = self.profile.to_json()
        return payload


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchReport:
    """A whole bench run; ``exit_code`` is what the CLI exits with."""

    project: str
    path: str
    started: float
    finished: float
    fingerprint: Mapping[str, Any]
    seeds: int
    repeats: int
    label: str | None
    code_hash: Mapping[str, str]
    results: tuple[PointResult, ...]
    baseline: str | None = None
    fail_on_regression: bool = False
    assert_floors: bool = False
    run_id: int | None = None
    provenance: Provenance | None = None  # where the project's packages were imported from
    profile: NcuSession | None = None  # --profile ncu: how the points were profiled

    @property
    def errored(self) -> tuple[PointResult, ...]:
        return tuple(r for r in self.results if r.status == "errored")

    @property
    def slower(self) -> tuple[PointResult, ...]:
        return tuple(r for r in self.results if r.comparison and r.comparison.verdict == "SLOWER")

    @property
    def floors_missed(self) -> tuple[PointResult, ...]:
        return tuple(r for r in self.results if r.floor is not None and r.floor.missed)

    @property
    def unasserted(self) -> bool:
        """``--assert-floors`` and not one point held to a floor: no floor names this machine
        (or none is in a unit its cases measure), so nothing was asserted."""
        return self.assert_floors and not any(r.floor is not None for r in self.results)

    @property
    def unprofiled(self) -> tuple[PointResult, ...]:
        """Timed points whose ncu profile failed (their timings stand)."""
        return tuple(r for r in self.results if r.profile is not None and not r.profile.ok)

    @property
    def verdict(self) -> str:
        """errored, regressed (a clear SLOWER), floor-missed (a floor checked and missed),
        no-floor (``--assert-floors`` with no floor for this machine), ok."""
        if self.errored:
            return "errored"
        if self.slower:
            return "regressed"
        if self.floors_missed:
            return "floor-missed"
        if self.unasserted:
            return "no-floor"
        return "ok"

    @property
    def exit_code(self) -> int:
        """1 when a gate failed; else 4 when ``--assert-floors`` asserted nothing (no floor
        names this machine: an empty gate is never a pass); else 3 when a requested profile
        could not be taken (the counters or ncu failed: the environment, DESIGN's 3); else 0."""
        gated = (
            bool(self.errored)
            or (self.fail_on_regression and bool(self.slower))
            or (self.assert_floors and bool(self.floors_missed))
        )
        if gated:
            return 1
        if self.unasserted:
            return 4
        return 3 if self.unprofiled else 0

    def summary_line(self) -> str:
        """One line for the end of a run: points by status, samples dropped, the baseline's
        SLOWER count, floors missed, what ncu profiled, the verdict and the stored run."""
        counts = {s: sum(r.status == s for r in self.results) for s in ("ok", "unsure", "errored")}
        text = f"{len(self.results)} points: " + ", ".join(f"{v} {k}" for k, v in counts.items())
        dropped = sum(r.measurement.dropped for r in self.results if r.measurement)
        if dropped:
            total = sum(len(r.samples) for r in self.results)
            text += f"; --drop-throttled left {dropped} of {total} samples out"
        if self.baseline:
            text += f"; vs {self.baseline}: {len(self.slower)} SLOWER"
        if self.floors_missed:
            text += f"; {len(self.floors_missed)} floors missed"
        text += self._profile_summary()
        run = f", run {self.run_id}" if self.run_id is not None else ""
        return f"{text}; verdict {self.verdict}{run}"

    def _profile_summary(self) -> str:
        if self.profile is None:
            return ""
        profiled = sum(r.profile is not None for r in self.results)
        failed = len(self.unprofiled)
        text = f"; ncu ({self.profile.metric_set}): {profiled - failed} of {profiled} profiled"
        return text + (f", reports in {self.profile.reports}" if self.profile.reports else "")

    def profile_errors(self) -> list[str]:
        """One line per distinct reason points were not profiled (the first point's key, and
        how many more share the reason)."""
        reasons: dict[str, list[str]] = {}
        for result in self.unprofiled:
            assert result.profile is not None  # unprofiled: a profile with an error
            reasons.setdefault(str(result.profile.error), []).append(result.key)
        return [
            f"{keys[0]}{f' (and {len(keys) - 1} more)' if len(keys) > 1 else ''} not profiled: "
            f"{reason}"
            for reason, keys in reasons.items()
        ]

    def meta(self) -> dict[str, Any]:
        meta = {
            "format": FORMAT,
            "seeds": self.seeds,
            "repeats": self.repeats,
            "label": self.label,
            "code_hash": dict(self.code_hash),
            "path": self.path,
            "provenance": None if self.provenance is None else self.provenance.to_json(),
        }
        if self.profile is not None:  # only then: runs without a profile keep their old shape
            meta["profile"] = self.profile.to_json()
        return meta


def sample_seed(index: int, seeds: int, repeats: int) -> int:
    """The input seed sample ``index`` was taken with: seed i // repeats in the fixed protocol
    (seeds 0..seeds-1), seed 0 in adaptive runs (repeats 0)."""
    return min(index // repeats, seeds - 1) if repeats > 0 else 0


def _slug(gpu: str | None) -> str:
    if not gpu:
        return "cpu"
    words = [w for w in "".join(c if c.isalnum() else " " for c in gpu.lower()).split()]
    return "-".join(w for w in words if w != "nvidia") or "gpu"


def export_name(fingerprint: Mapping[str, Any], started: float, suffix: str) -> str:
    """``benchmark_<gpu-or-cpu>_<YYYYmmdd-HHMMSS>.<suffix>`` (local time of the run's start)."""
    import time

    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(started))
    return f"benchmark_{_slug(fingerprint.get('gpu'))}_{stamp}.{suffix}"


def to_json(report: BenchReport) -> dict[str, Any]:
    """The JSON export: the run as stored, plus each point's verdict against the baseline."""
    from cuship.version import __version__

    results = []
    for r in report.results:
        entry: dict[str, Any] = {
            "key": r.key,
            "status": r.status,
            "payload": r.payload(),
            "numbers": r.numbers(),
            "notes": r.notes(),
        }
        if r.measurement is not None:
            entry["clocks"] = _facts.clocks_json(r.measurement)
            entry["timing"] = _facts.timing_json(r.measurement, r.cold)
        if r.peak is not None:
            entry["peak"] = r.peak.to_json()
        if r.profile is not None:
            entry["ncu"] = r.profile.to_json()
        if r.comparison is not None:
            c = r.comparison
            entry["comparison"] = {
                "verdict": c.verdict,
                "ratio": c.ratio,
                "low": c.low if math.isfinite(c.low) else None,
                "high": c.high if math.isfinite(c.high) else None,
                "threshold": c.threshold,
                "more_samples": c.more_samples,
            }
        if r.floor is not None:
            entry["floor"] = {"machine": r.floor.machine, "floor": r.floor.floor}
            entry["floor"].update(unit=r.floor.unit, measured=r.floor.measured)
            entry["floor"]["missed"] = r.floor.missed
        results.append(entry)
    return {
        "format": FORMAT,
        "cuship_version": __version__,
        "run": {
            "id": report.run_id,
            "kind": "bench",
            "project": report.project,
            "started": report.started,
            "finished": report.finished,
            "verdict": report.verdict,
            "fingerprint": dict(report.fingerprint),
            "meta": report.meta(),
            "baseline": report.baseline,
        },
        "results": results,
    }


def to_csv(report: BenchReport) -> str:
    """One row per raw sample, with the columns of :data:`CSV_COLUMNS`."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    machine = report.fingerprint.get("machine_id", "")
    for r in report.results:
        params = json.dumps(dict(r.params), sort_keys=True, separators=(",", ":"), default=str)
        m = r.measurement
        throttled = set(m.throttled) if m else set()
        dropped = throttled if m and m.drop_throttled and m.dropped else set()
        clocks = m.clocks if m else ()
        point = (*_facts.csv_point_fields(m, r.cold, r.peak), *_profile.csv_fields(r.profile))
        for i, value in enumerate(r.samples):
            seed = sample_seed(i, report.seeds, report.repeats)
            unit = m.unit if m else "s"
            clock = clocks[i] if i < len(clocks) and clocks[i] is not None else ""
            row: Sequence[object] = (report.run_id, machine, r.key, r.case, params, r.status)
            sample = (i, seed, repr(value), unit, int(i in throttled), clock, int(i not in dropped))
            writer.writerow((*row, *sample, *point))
    return out.getvalue()


def export(report: BenchReport, directory: Path, *, csv_too: bool = False) -> list[Path]:
    """Write :func:`to_json` (and with ``csv_too`` :func:`to_csv` beside it) into ``directory``
    under :func:`export_name`, each file atomically; the paths written, the CSV first."""
    from cuship._fs import write_atomic, write_json

    directory.mkdir(parents=True, exist_ok=True)
    json_path = directory / export_name(report.fingerprint, report.started, "json")
    write_json(json_path, to_json(report), allow_nan=False, default=str)
    if not csv_too:
        return [json_path]
    csv_path = json_path.with_suffix(".csv")
    write_atomic(csv_path, to_csv(report).encode("utf-8"))
    return [csv_path, json_path]
