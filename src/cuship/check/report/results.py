"""Results of a check run: per case, per (op, engine, dtype) group, and the whole run."""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from cuship import settings
from cuship.check.declare.inputs import CaseSpec
from cuship.check.run.availability import Unavailable
from cuship.check.sanitize.results import SanitizerRun
from cuship.provenance import Provenance

__all__ = [
    "CODE_ENV",
    "CaseResult",
    "CheckReport",
    "GroupResult",
    "Regression",
    "Status",
    "code_env",
    "json_number",
]

# The environment that chose the code a check ran (where Python imported it from, which GPU, what
# cuship took the machine to be): a reproduce line carries it, so that it checks the same thing.
CODE_ENV = ("PYTHONPATH", "CUDA_VISIBLE_DEVICES", *settings.CHECK_CHOICES)


def code_env(environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The :data:`CODE_ENV` variables ``environ`` sets, in that order."""
    return tuple((name, environ[name]) for name in CODE_ENV if environ.get(name))


Status = Literal["passed", "failed", "error", "skipped"]
Verdict = Literal["passed", "failed", "unavailable", "empty"]


def json_number(value: float | None) -> float | str | None:
    """JSON has no inf/NaN: write them as strings."""
    if value is None or math.isfinite(value):
        return value
    return str(value)


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


@dataclass(frozen=True, slots=True, kw_only=True)
class CaseResult:
    case: CaseSpec
    status: Status
    message: str | None = None
    total: int = 0
    mismatches: int = 0
    max_abs: float | None = None
    max_rel: float | None = None
    worst_index: tuple[int, ...] | None = None
    worst_actual: float | None = None
    worst_expected: float | None = None
    output: str | None = None  # the output holding the worst element
    kernel_s: float = 0.0
    wall_s: float = 0.0

    @classmethod
    def from_worker(cls, case: CaseSpec, raw: Mapping[str, Any], wall_s: float) -> CaseResult:
        index = raw.get("worst_index")
        return cls(
            case=case,
            status=raw["status"],
            message=raw.get("message"),
            total=int(raw.get("total", 0)),
            mismatches=int(raw.get("mismatches", 0)),
            max_abs=_number(raw.get("max_abs")),
            max_rel=_number(raw.get("max_rel")),
            worst_index=tuple(index) if index is not None else None,
            worst_actual=_number(raw.get("worst_actual")),
            worst_expected=_number(raw.get("worst_expected")),
            output=raw.get("output"),
            kernel_s=float(raw.get("kernel_s", 0.0)),
            wall_s=wall_s,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "case": self.case.to_json(),
            "status": self.status,
            "message": self.message,
            "total": self.total,
            "mismatches": self.mismatches,
            "max_abs": json_number(self.max_abs),
            "max_rel": json_number(self.max_rel),
            "worst_index": list(self.worst_index) if self.worst_index is not None else None,
            "worst_actual": json_number(self.worst_actual),
            "worst_expected": json_number(self.worst_expected),
            "output": self.output,
            "kernel_s": self.kernel_s,
            "wall_s": self.wall_s,
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> CaseResult:
        return cls.from_worker(CaseSpec.from_json(raw["case"]), raw, float(raw.get("wall_s", 0)))


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupResult:
    """One (op, engine, dtype): the unit of junit test cases and of baselines."""

    op: str
    engine: str
    dtype: str
    rtol: float
    atol: float
    cases: tuple[CaseResult, ...] = ()
    skip_reason: str | None = None

    @property
    def key(self) -> str:
        return f"{self.op}/{self.engine}/{self.dtype}"

    @property
    def status(self) -> Status:
        if self.skip_reason is not None or not self.cases:
            return "skipped"
        if any(c.status == "error" for c in self.cases):
            return "error"
        if any(c.status == "failed" for c in self.cases):
            return "failed"
        return "passed"

    @property
    def bad_cases(self) -> tuple[CaseResult, ...]:
        return tuple(c for c in self.cases if c.status in ("failed", "error"))

    def _max(self, name: str) -> float | None:
        values = [getattr(c, name) for c in self.cases if getattr(c, name) is not None]
        return max(values) if values else None

    @property
    def max_abs(self) -> float | None:
        return self._max("max_abs")

    @property
    def max_rel(self) -> float | None:
        return self._max("max_rel")

    @property
    def mismatches(self) -> int:
        return sum(c.mismatches for c in self.cases)

    @property
    def wall_s(self) -> float:
        return sum(c.wall_s for c in self.cases)

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "engine": self.engine,
            "dtype": self.dtype,
            "status": self.status,
            "skip_reason": self.skip_reason,
            "rtol": self.rtol,
            "atol": self.atol,
            "max_abs": json_number(self.max_abs),
            "max_rel": json_number(self.max_rel),
            "mismatches": self.mismatches,
            "wall_s": self.wall_s,
            "cases": [c.to_json() for c in self.cases],
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> GroupResult:
        return cls(
            op=raw["op"],
            engine=raw["engine"],
            dtype=raw["dtype"],
            rtol=float(raw["rtol"]),
            atol=float(raw["atol"]),
            cases=tuple(CaseResult.from_json(c) for c in raw.get("cases", ())),
            skip_reason=raw.get("skip_reason"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Regression:
    """A group that got worse than its baseline."""

    key: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"key": self.key, "message": self.message}


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckReport:
    """A whole run. ``target`` is the PATH as given, used in reproduction commands.

    ``provenance``: where the project's packages were imported from in the workers;
    ``unavailable``: engines whose modules did not import (their groups are skipped);
    ``sanitize``: one pass per compute-sanitizer tool over the GPU engines' cases.
    ``force_ptx``: the ``cuda`` engine ran under ``CUDA_FORCE_PTX_JIT=1`` (``--force-ptx``),
    and ``jit`` says which PTX each GPU JIT-compiled for which shared object.
    ``env``: the variables of :data:`CODE_ENV` the run had; its reproduce lines set them.
    """

    target: str
    device: str
    seed: int
    quick: bool
    started: float
    finished: float
    groups: tuple[GroupResult, ...]
    regressions: tuple[Regression, ...] = field(default=())
    gate_regressions: bool = True
    provenance: Provenance | None = None
    unavailable: tuple[Unavailable, ...] = ()
    sanitize: tuple[SanitizerRun, ...] = ()
    force_ptx: bool = False
    jit: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()

    def case_command(
        self, op: str, engine: str, dtype: str, index: int, flags: Sequence[str] = ()
    ) -> str:
        """``cuship check`` of one case of this run (its target, selection and seed), with
        ``flags`` after ``--device``: what the run added (``--force-ptx``, ``--sanitize TOOL``),
        after the run's ``env`` (``PYTHONPATH=src cuship check ...``)."""
        prefix = "".join(f"{name}={shlex.quote(value)} " for name, value in self.env)
        args = ["cuship", "check", self.target]
        if self.quick:
            args.append("--quick")
        args += ["--device", self.device, *flags, "--op", op, "--engine", engine]
        args += ["--dtype", dtype, "--seed", str(self.seed), "--case", str(index)]
        return prefix + shlex.join(args)

    def count(self, status: Status) -> int:
        return sum(1 for g in self.groups if g.status == status)

    def unavailable_for(self, group: GroupResult) -> Unavailable | None:
        """The unavailable engine that made ``group`` skip, if that is why it skipped."""
        return next(
            (
                u
                for u in self.unavailable
                if u.engine == group.engine and group.skip_reason == u.reason
            ),
            None,
        )

    def left_out(self) -> tuple[str, ...]:
        """One line per engine some groups of which did not run, and why: an engine that could
        not import with its fix (the install line), then each other engine by skip reason
        (``engine cuda left out of 3 groups: needs a CUDA GPU ...``)."""
        lines = [u.line() for u in self.unavailable]
        skipped: dict[tuple[str, str], int] = {}
        for group in self.groups:
            if group.status != "skipped" or self.unavailable_for(group) is not None:
                continue
            key = (group.engine, group.skip_reason or "no cases")
            skipped[key] = skipped.get(key, 0) + 1
        for (engine, reason), count in skipped.items():
            groups = "1 group" if count == 1 else f"{count} groups"
            lines.append(f"engine {engine} left out of {groups}: {reason}")
        return tuple(lines)

    @property
    def verdict(self) -> Verdict:
        """failed (a case, a gated regression or a sanitizer finding) > passed (from the engines
        that ran) > unavailable (nothing ran because engines could not import) > empty."""
        if (
            (self.regressions and self.gate_regressions)
            or any(g.status in ("failed", "error") for g in self.groups)
            or any(run.failed for run in self.sanitize)
        ):
            return "failed"
        if any(g.status == "passed" for g in self.groups):
            return "passed"
        if any(self.unavailable_for(g) is not None for g in self.groups):
            return "unavailable"
        return "empty"

    @property
    def exit_code(self) -> int:
        return {"passed": 0, "failed": 1, "unavailable": 3, "empty": 4}[self.verdict]

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "device": self.device,
            "seed": self.seed,
            "quick": self.quick,
            "force_ptx": self.force_ptx,
            "jit": list(self.jit),
            "env": dict(self.env),
            "started": self.started,
            "finished": self.finished,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "counts": {s: self.count(s) for s in ("passed", "failed", "error", "skipped")},
            "provenance": None if self.provenance is None else self.provenance.to_json(),
            "unavailable": [u.to_json() for u in self.unavailable],
            "groups": [g.to_json() for g in self.groups],
            "regressions": [r.to_json() for r in self.regressions],
            "gate_regressions": self.gate_regressions,
            "sanitize": [run.to_json() for run in self.sanitize],
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> CheckReport:
        """The report :meth:`to_json` wrote (e.g. to render a JSON report again as JUnit)."""
        return cls(
            target=raw["target"],
            device=raw["device"],
            seed=int(raw["seed"]),
            quick=bool(raw["quick"]),
            started=float(raw["started"]),
            finished=float(raw["finished"]),
            groups=tuple(GroupResult.from_json(g) for g in raw.get("groups", ())),
            regressions=tuple(
                Regression(key=r["key"], message=r["message"]) for r in raw.get("regressions", ())
            ),
            gate_regressions=bool(raw.get("gate_regressions", True)),
            provenance=None
            if raw.get("provenance") is None
            else Provenance.from_json(raw["provenance"]),
            unavailable=tuple(Unavailable.from_json(u) for u in raw.get("unavailable", ())),
            sanitize=tuple(SanitizerRun.from_json(s) for s in raw.get("sanitize", ())),
            force_ptx=bool(raw.get("force_ptx", False)),
            jit=tuple(raw.get("jit", ())),
            env=tuple((str(k), str(v)) for k, v in raw.get("env", {}).items()),
        )
