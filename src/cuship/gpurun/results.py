"""What a GPU run found: per-stage results, the overall exit code, ``gpu-run.json``.

Exit codes are cuship's (:mod:`cuship.errors`). A stage's code is its command's, mapped onto them
(:func:`stage_code`: pytest's own codes are translated; a crash or a signal is 1). The run's code
is the most serious code among the install step and the stages that ran, in this order
(:data:`PRECEDENCE`)::

    2  bad usage, config or input   - the run was asked wrongly: nothing after it means much
    3  a tool or environment missing - this machine could not run a stage (engine, dependency)
    1  something checked failed      - a test, a check, a regression, a floor, a verification
    4  nothing was checked           - a stage ran and selected nothing (an empty run is not green)
    0  every stage that ran passed

2 and 3 come before 1 because a failure next to a misconfigured or incomplete run cannot be
trusted as the whole story; 4 comes after 1 because a real failure says more than an empty stage.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "PRECEDENCE",
    "VERDICTS",
    "GpuRunReport",
    "InstallResult",
    "StageResult",
    "overall_exit",
    "stage_code",
]

PRECEDENCE: tuple[int, ...] = (2, 3, 1, 4, 0)
VERDICTS: Mapping[int, str] = {
    0: "passed",
    1: "failed",
    2: "usage-error",
    3: "tool-missing",
    4: "empty",
}
# pytest's exit codes: 1 tests failed, 2 interrupted (collection errors), 3 internal error,
# 4 usage error (e.g. a bad [ci] pytest_args), 5 no tests collected.
_PYTEST = {0: 0, 1: 1, 2: 1, 3: 1, 4: 2, 5: 4}


def stage_code(stage: str, raw: int) -> int:
    """A stage command's exit status as a cuship exit code."""
    if stage == "pytest":
        return _PYTEST.get(raw, 1)
    return raw if raw in VERDICTS else 1


def overall_exit(codes: Iterable[int]) -> int:
    """The most serious of ``codes`` by :data:`PRECEDENCE`; 4 when there are none."""
    found = set(codes)
    if not found:
        return 4
    for code in PRECEDENCE:
        if code in found:
            return code
    return 1  # pragma: no cover - stage_code only yields codes in PRECEDENCE


def _rel(path: Path | None, results: Path) -> str | None:
    if path is None:
        return None
    try:
        return str(path.relative_to(results))
    except ValueError:
        return str(path)


@dataclass(frozen=True, slots=True, kw_only=True)
class StageResult:
    """One stage as it ran (or why it did not)."""

    name: str
    command: tuple[str, ...]
    env: Mapping[str, str]
    cwd: Path
    log: Path | None
    exit_code: int | None  # None: did not run
    raw_exit_code: int | None = None
    duration_s: float = 0.0
    verdict: str = "not-run"  # a VERDICTS value, "skipped" or "not-run"
    reason: str | None = None
    outputs: tuple[Path, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def ran(self) -> bool:
        return self.exit_code is not None

    def to_json(self, results: Path) -> dict[str, Any]:
        return {
            "name": self.name,
            "command": list(self.command),
            "env": dict(self.env),
            "cwd": str(self.cwd),
            "exit_code": self.exit_code,
            "raw_exit_code": self.raw_exit_code,
            "duration_s": round(self.duration_s, 3),
            "log": _rel(self.log, results),
            "verdict": self.verdict,
            "reason": self.reason,
            "outputs": [_rel(p, results) for p in self.outputs if p.exists()],
            "notes": list(self.notes),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class InstallResult:
    """The install step: where the wheel went, what it proved, how it went."""

    mode: str
    python: str
    venv: Path | None
    wheel: Path
    wheel_sha256: str
    commands: tuple[tuple[str, ...], ...]
    log: Path
    exit_code: int
    verdict: str
    duration_s: float
    reason: str | None = None
    dist: Mapping[str, Any] | None = None  # the installed distribution as the probe saw it

    def to_json(self, results: Path) -> dict[str, Any]:
        dist = self.dist or {}
        return {
            "mode": self.mode,
            "python": self.python,
            "venv": None if self.venv is None else str(self.venv),
            "wheel": str(self.wheel),
            "wheel_sha256": self.wheel_sha256,
            "location": dist.get("location"),
            "version": dist.get("version"),
            "origins": dist.get("origins", {}),
            "missing_requirements": dist.get("missing", []),
            "commands": [list(c) for c in self.commands],
            "log": _rel(self.log, results),
            "exit_code": self.exit_code,
            "verdict": self.verdict,
            "reason": self.reason,
            "duration_s": round(self.duration_s, 3),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuRunReport:
    """The whole run; ``exit_code`` is what ``cuship gpu-run`` exits with."""

    project: Path
    name: str
    results: Path
    machine: Mapping[str, Any]
    wheel: Mapping[str, Any]
    install: InstallResult
    stages: tuple[StageResult, ...] = ()
    started: str = ""
    duration_s: float = 0.0
    notes: tuple[str, ...] = field(default=())

    @property
    def exit_code(self) -> int:
        """The install step's code when it failed (no stage ran then), else the stages' by
        :data:`PRECEDENCE`; 4 when no stage ran at all."""
        if self.install.exit_code:
            return self.install.exit_code
        return overall_exit(s.exit_code for s in self.stages if s.exit_code is not None)

    @property
    def verdict(self) -> str:
        return VERDICTS[self.exit_code]

    def failed_stages(self) -> Sequence[StageResult]:
        return [s for s in self.stages if s.exit_code]

    def rows(self) -> list[tuple[str, str, str, str, str]]:
        """(step, verdict, exit code, time, log or reason) for the install step and each stage."""
        install = self.install
        took = f"{install.duration_s:.1f}s"
        rows = [
            (
                "install",
                install.verdict,
                str(install.exit_code),
                took,
                install.reason or "install.log",
            )
        ]
        for stage in self.stages:
            code = "-" if stage.exit_code is None else str(stage.exit_code)
            took = f"{stage.duration_s:.1f}s" if stage.ran else "-"
            detail = stage.reason or (_rel(stage.log, self.results) or "")
            rows.append((stage.name, stage.verdict, code, took, detail))
        return rows

    def to_text(self) -> str:
        """The summary as a plain-text table (``gpu-run.txt``), for logs and artifacts."""
        header = ("step", "verdict", "exit", "time", "log / reason")
        rows = [header, *self.rows()]
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = [
            "  ".join(c.ljust(w) for c, w in zip(r[:4], widths, strict=True)) + "  " + r[4]
            for r in rows
        ]
        gpus = ", ".join(f"{g['name']} ({g['cc']})" for g in self.machine.get("gpus", ()))
        faked = " (faked)" if self.machine.get("gpu_faked") else ""
        head = f"cuship gpu-run: {self.name} on {gpus}{faked}; wheel {self.wheel.get('filename')}"
        tail = f"exit {self.exit_code} ({self.verdict})"
        return "\n".join([head, *lines, tail]) + "\n"

    def to_json(self) -> dict[str, Any]:
        from cuship.version import __version__

        return {
            "cuship": __version__,
            "project": {"path": str(self.project), "name": self.name},
            "exit_code": self.exit_code,
            "verdict": self.verdict,
            "precedence": list(PRECEDENCE),
            "started": self.started,
            "duration_s": round(self.duration_s, 3),
            "machine": dict(self.machine),
            "wheel": dict(self.wheel),
            "install": self.install.to_json(self.results),
            "stages": [s.to_json(self.results) for s in self.stages],
            "notes": list(self.notes),
        }
