"""Results of a sanitized pass: per case run under a compute-sanitizer tool, and per tool.

A case ``failed`` when the tool reported something for it, and is an ``error`` when it could not
be checked under the tool (the worker died, hung or could not start, or the case raised without
a report to explain it). The report's own lines are kept, bounded, with each case.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from cuship.check.declare.inputs import CaseSpec
from cuship.check.sanitize.parse import Finding

__all__ = [
    "MAX_LINES",
    "SanitizedCase",
    "SanitizedStatus",
    "SanitizerRun",
    "StrayFindings",
    "Summary",
    "summarise",
]

SanitizedStatus = Literal["passed", "failed", "error"]

MAX_LINES = 40  # of the sanitizer's own lines kept per case (the first findings, whole)


@dataclass(frozen=True, slots=True, kw_only=True)
class Summary:
    """What a list of findings says, bounded: how many, their kinds, kernels and first lines."""

    findings: int = 0
    kinds: tuple[str, ...] = ()
    kernels: tuple[str, ...] = ()
    lines: tuple[str, ...] = ()


def summarise(findings: Sequence[Finding]) -> Summary:
    lines: list[str] = []
    for finding in findings:
        if len(lines) + len(finding.lines) > MAX_LINES:
            lines.append(f"... {len(findings)} findings in all; the first shown")
            break
        lines.extend(finding.lines)
    return Summary(
        findings=len(findings),
        kinds=tuple(dict.fromkeys(f.kind for f in findings)),
        kernels=tuple(dict.fromkeys(n for f in findings if (n := f.kernel_name) is not None)),
        lines=tuple(lines),
    )


def _summary_json(summary: Summary) -> dict[str, Any]:
    return {
        "findings": summary.findings,
        "kinds": list(summary.kinds),
        "kernels": list(summary.kernels),
        "lines": list(summary.lines),
    }


def _summary_from(raw: Mapping[str, Any]) -> Summary:
    return Summary(
        findings=int(raw.get("findings", 0)),
        kinds=tuple(raw.get("kinds", ())),
        kernels=tuple(raw.get("kernels", ())),
        lines=tuple(raw.get("lines", ())),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class SanitizedCase:
    """One case run under a tool: what the tool reported, and how the case itself ended."""

    op: str
    engine: str
    dtype: str
    case: CaseSpec
    status: SanitizedStatus  # passed (nothing reported), failed (findings), error (not checked)
    report: Summary = Summary()
    message: str | None = None  # the case's own outcome when it did not pass (or the death)
    wall_s: float = 0.0
    plain_s: float | None = None  # the same case's time in the plain run

    @property
    def key(self) -> str:
        return f"{self.op}/{self.engine}/{self.dtype}"

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "engine": self.engine,
            "dtype": self.dtype,
            "case": self.case.to_json(),
            "status": self.status,
            **_summary_json(self.report),
            "message": self.message,
            "wall_s": self.wall_s,
            "plain_s": self.plain_s,
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> SanitizedCase:
        plain = raw.get("plain_s")
        return cls(
            op=raw["op"],
            engine=raw["engine"],
            dtype=raw["dtype"],
            case=CaseSpec.from_json(raw["case"]),
            status=raw["status"],
            report=_summary_from(raw),
            message=raw.get("message"),
            wall_s=float(raw.get("wall_s", 0.0)),
            plain_s=None if plain is None else float(plain),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class StrayFindings:
    """Findings that belong to no case (reported while a worker started, or at its exit)."""

    where: str
    report: Summary

    def to_json(self) -> dict[str, Any]:
        return {"where": self.where, **_summary_json(self.report)}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> StrayFindings:
        return cls(where=str(raw["where"]), report=_summary_from(raw))


@dataclass(frozen=True, slots=True, kw_only=True)
class SanitizerRun:
    """One tool's pass over the GPU engines' cases. ``wall_s``: the whole pass, sanitized
    workers' start-ups included; the cost is the cases' time against the plain run's."""

    tool: str
    command: tuple[str, ...]  # how each worker was started (the FIFO's path as <log>)
    cases: tuple[SanitizedCase, ...] = ()
    unattributed: tuple[StrayFindings, ...] = ()
    wall_s: float = 0.0
    workers: int = 0  # sanitized workers started: one, plus one after each case with findings
    errors: int = 0  # the tool's own ERROR SUMMARY totals
    not_printed: int = 0
    probes: int = 0  # failed driver entry-point lookups the tool reported, ignored
    note: str | None = None  # e.g. why nothing was run

    @property
    def bad_cases(self) -> tuple[SanitizedCase, ...]:
        return tuple(c for c in self.cases if c.status in ("failed", "error"))

    @property
    def failed(self) -> bool:
        return bool(self.bad_cases or self.unattributed)

    @property
    def cases_s(self) -> float:
        """The sanitized time of the cases that ran."""
        return sum(c.wall_s for c in self.cases)

    @property
    def plain_s(self) -> float:
        """The plain run's time of the same cases (those that ran sanitized)."""
        return sum(c.plain_s or 0.0 for c in self.cases if c.wall_s > 0)

    @property
    def slowdown(self) -> float | None:
        """Sanitized case time over the plain run's for the same cases."""
        plain = self.plain_s
        return self.cases_s / plain if plain > 0 else None

    def groups(self) -> dict[str, tuple[SanitizedCase, ...]]:
        """The cases by op/engine/dtype, in run order."""
        found: dict[str, list[SanitizedCase]] = {}
        for case in self.cases:
            found.setdefault(case.key, []).append(case)
        return {key: tuple(cases) for key, cases in found.items()}

    def to_json(self) -> dict[str, Any]:
        slowdown = self.slowdown
        return {
            "tool": self.tool,
            "command": list(self.command),
            "status": "failed" if self.failed else ("passed" if self.cases else "empty"),
            "wall_s": self.wall_s,
            "cases_s": self.cases_s,
            "plain_s": self.plain_s,
            "slowdown": None if slowdown is None else round(slowdown, 3),
            "workers": self.workers,
            "errors": self.errors,
            "not_printed": self.not_printed,
            "probes": self.probes,
            "note": self.note,
            "cases": [c.to_json() for c in self.cases],
            "unattributed": [u.to_json() for u in self.unattributed],
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> SanitizerRun:
        return cls(
            tool=str(raw["tool"]),
            command=tuple(raw.get("command", ())),
            cases=tuple(SanitizedCase.from_json(c) for c in raw.get("cases", ())),
            unattributed=tuple(StrayFindings.from_json(u) for u in raw.get("unattributed", ())),
            wall_s=float(raw.get("wall_s", 0.0)),
            workers=int(raw.get("workers", 0)),
            errors=int(raw.get("errors", 0)),
            not_printed=int(raw.get("not_printed", 0)),
            probes=int(raw.get("probes", 0)),
            note=raw.get("note"),
        )
