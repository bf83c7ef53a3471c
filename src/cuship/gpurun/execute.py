"""Run a GPU run's plan: probe interpreters, install the wheel, run the stages, verify imports.

Every command's output goes to a log file in the results directory; failures replay the log's
tail as events. Each step (the install, then each stage) is told as progress events of topic
``gpu-run``: ``[2/6] pytest: running (log …)`` as it starts, ``[2/6] pytest: passed (exit 0)
in 12.3 s`` as it ends (``failed`` when it failed). Nothing here decides what to run: that is
:mod:`cuship.gpurun.plan`.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuship import _read, process
from cuship._fs import remove_file, sha256_file, write_atomic
from cuship.errors import CannotStart, InputError, ToolMissing
from cuship.events import Emit, Event, discard, progress
from cuship.gpurun.plan import Inside, InstallPlan, StagePlan
from cuship.gpurun.results import VERDICTS, InstallResult, StageResult, stage_code
from cuship.machine.interpreter import read

__all__ = ["Step", "install", "judge_origins", "probe", "run_stage", "tell_unrun"]

_TAIL = 40


@dataclass(frozen=True, slots=True)
class Step:
    """Where a step stands in the run: number ``number`` of ``total`` (the install first)."""

    number: int = 1
    total: int = 1

    def started(self, name: str, said: str, emit: Emit) -> None:
        data = {"phase": "stage-start"}
        emit(progress("gpu-run", self.number, self.total, name, said, data=data))

    def ended(
        self, name: str, said: str, seconds: float | None, emit: Emit, *, failed: bool = False
    ) -> None:
        data = {"phase": "stage-end"}
        event = progress(
            "gpu-run", self.number, self.total, name, said, seconds, failed=failed, data=data
        )
        emit(event)


def _run(argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, log: Path) -> int:
    """Run ``argv`` with its output appended to ``log``; 127 when it cannot be started."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a", encoding="utf-8") as out:
        out.write(f"$ {shlex.join(argv)}\n")
        out.flush()
        try:
            done = process.run(argv, env=env, cwd=cwd, log=out)
        except CannotStart as err:
            out.write(f"cannot start {argv[0]!r}: {err.reason}\n")
            return 127
    return done.returncode


def _tail(log: Path) -> str:
    try:
        return process.tail(_read.read_tail(log), _TAIL)
    except OSError:
        return ""


def _replay(log: Path, title: str, emit: Emit) -> None:
    emit(Event(level="group-start", topic="gpu-run", message=title))
    emit(Event(level="info", topic="gpu-run", message=_tail(log)))
    emit(Event(level="group-end", topic="gpu-run", message=title))


def probe(
    python: str,
    *,
    env: Mapping[str, str],
    cwd: Path,
    dist: str | None = None,
    venv: Path | None = None,
) -> Inside:
    """What :mod:`cuship.gpurun._inside` reports from inside ``python``."""
    argv = [python, "-m", "cuship.gpurun._inside"]
    argv += ["--dist", dist] if dist else []
    argv += ["--venv", str(venv)] if venv else []
    done = process.run(argv, env=env, cwd=cwd)
    if done.returncode != 0:
        tail = done.tail(1) or "no output"
        raise ToolMissing(
            f"cuship cannot run inside {python!r}: {tail}",
            hint="install cuship into that interpreter: its stages run `python -m cuship` there",
        )
    try:
        facts: dict[str, Any] = _read.loads(done.stdout)
    except _read.JsonRefused as err:
        raise ToolMissing(
            f"cuship inside {python!r} did not answer: its output {err.problem}",
            hint="install cuship into that interpreter: its stages run `python -m cuship` there",
        ) from None
    if not isinstance(facts, dict):
        raise ToolMissing(f"cuship inside {python!r} answered {_read.shown(facts)}, not facts")
    hint = "install this cuship into that interpreter: its stages run `python -m cuship` there"
    if "interpreter" not in facts:  # a cuship older than the one probe
        said = _read.shown(facts.get("cuship"))
        raise ToolMissing(f"cuship inside {python!r} is another version ({said})", hint=hint)
    try:
        interpreter = read(facts["interpreter"], what=f"cuship inside {python!r}: its answer")
    except InputError as err:
        raise ToolMissing(err.message, hint=hint) from None
    return Inside(
        interpreter=interpreter,
        torch=facts.get("torch") if isinstance(facts.get("torch"), dict) else None,
        venv_purelib=facts.get("venv_purelib"),
        dist=facts.get("dist"),
    )


def _judge_install(dist: Mapping[str, Any] | None, name: str) -> tuple[int, str | None]:
    if dist is None:
        return 1, f"pip finished but {name!r} is not installed for the stage interpreter"
    if dist["foreign"]:
        where = ", ".join(f"{m} -> {dist['origins'][m]!r}" for m in dist["foreign"])
        return 1, f"the installed wheel would not be imported: {where} (not {dist['location']!r})"
    if dist["missing"]:
        return 3, "missing dependencies: " + "; ".join(dist["missing"])
    return 0, None


def _install_steps(
    plan: InstallPlan, *, env: Mapping[str, str], cwd: Path, log: Path
) -> tuple[int, str | None]:
    """Run the install commands; (exit code, reason) of the first that fails, else (0, None)."""
    for index, command in enumerate(plan.commands):
        raw = _run(command, env=env, cwd=cwd, log=log)
        if raw != 0 and index == 0 and plan.mode == "venv":
            return 3, f"making the venv failed (exit {raw}; python3-venv missing? see {log.name})"
        if raw != 0:
            return 1, f"pip install exited {raw} (see {log.name})"
        if index == 0 and plan.layer is not None:
            write_atomic(plan.layer[0], plan.layer[1].encode("utf-8"))
    return 0, None


def _installed(
    plan: InstallPlan, name: str, *, env: Mapping[str, str], cwd: Path, log: Path
) -> tuple[int, str | None, Mapping[str, Any] | None]:
    """(exit code, reason, the installed distribution as the stage interpreter sees it)."""
    code, reason = _install_steps(plan, env=env, cwd=cwd, log=log)
    if code:
        return code, reason, None
    try:
        dist = probe(plan.python, env=env, cwd=cwd, dist=name).dist
    except ToolMissing as err:  # e.g. the venv cannot import cuship: say so in gpu-run.json
        return err.exit_code, err.message, None
    code, reason = _judge_install(dist, name)
    return code, reason, dist


def install(
    plan: InstallPlan,
    wheel: Path,
    name: str,
    *,
    env: Mapping[str, str],
    cwd: Path,
    log: Path,
    emit: Emit = discard,
    step: Step = Step(),
) -> InstallResult:
    """Install ``wheel`` as planned, then prove it: installed, imported from there, deps met."""
    started = time.monotonic()
    where = f"a venv at {plan.venv}" if plan.venv else plan.python
    step.started("install", f"{wheel.name} into {where}", emit)
    remove_file(log.parent, log.name)
    code, reason, dist = _installed(plan, name, env=env, cwd=cwd, log=log)
    if code:
        _replay(log, "install log (tail)", emit)
    said = f"{VERDICTS[code]}: {reason}" if code else VERDICTS[code]
    step.ended("install", said, time.monotonic() - started, emit, failed=bool(code))
    return InstallResult(
        mode=plan.mode,
        python=plan.python,
        venv=plan.venv,
        wheel=wheel,
        wheel_sha256=sha256_file(wheel),
        commands=plan.commands,
        log=log,
        exit_code=code,
        verdict=VERDICTS[code],
        reason=reason,
        dist=dist,
        duration_s=time.monotonic() - started,
    )


def judge_origins(path: Path, dist: Mapping[str, Any]) -> tuple[int, tuple[str, ...]]:
    """(1 or 0, notes) from the pytest origins record: 1 when a process imported the package
    from elsewhere than where the probe found the installed copy."""
    try:
        text = _read.read_text(path, _read.RESULTS)
        lines = [_read.loads(line) for line in text.splitlines()]
    except (OSError, _read.Refused):
        return 0, ("no record of where pytest imported the package from",)
    errors = [str(line["error"]) for line in lines if "error" in line]
    if errors:
        return 1, tuple(f"pytest's interpreter: {e}" for e in dict.fromkeys(errors))
    seen = [m for line in lines for m in line.get("modules", ())]
    bad = [m for m in seen if not m["installed"]]
    if bad:
        shown = ", ".join(f"{m['module']} from {m['file']!r}" for m in bad)
        return 1, (f"pytest imported {shown}, not the installed wheel at {dist['location']!r}",)
    if not seen:
        return 0, (f"the tests never imported {', '.join(dist['top_level'])}",)
    files = sorted({str(m["file"]) for m in seen})
    return 0, (f"imported from the installed wheel: {', '.join(files)}",)


def _derive_junit(stage: StagePlan) -> tuple[str, ...]:
    """check.xml rendered from check.json (cuship check writes one format per run), likewise
    check-ptx.xml and sanitize.xml; for the sanitize stage, each tool's cost as a note."""
    from cuship.check.report.render import render_junit
    from cuship.check.report.results import CheckReport
    from cuship.check.sanitize.report import cost_line

    source, target = stage.extra["json"], stage.extra["junit"]
    if not source.is_file():
        return ()
    try:
        report = CheckReport.from_json(_read.read_json(source, _read.RESULTS))
    except (OSError, _read.Refused, ValueError, KeyError, TypeError) as err:
        return (f"{source.name} could not be read back for JUnit: {err}",)
    write_atomic(target, render_junit(report).encode("utf-8"))
    return tuple(cost_line(run) for run in report.sanitize)


def _after(
    stage: StagePlan, code: int, dist: Mapping[str, Any]
) -> tuple[int, tuple[str, ...], str | None]:
    """(code, notes, reason) once the stage's own files are read: pytest's import record
    (importing the package from elsewhere fails the stage, and is its reason), check's JUnit."""
    if stage.name == "pytest":
        verified, notes = judge_origins(stage.extra["origins"], dist)
        if verified:
            return (verified if code == 0 else code), notes, notes[0]
        return code, notes, None
    if stage.name in ("check", "check-ptx", "sanitize"):
        refused = stage.name != "check" and code in (3, 4)
        return code, _derive_junit(stage), _refusal(stage.log) if refused else None
    return code, (), None


def _refusal(log: Path) -> str | None:
    """The error line a command wrote before exiting 3 or 4 (``error: …`` or ``::error::…``):
    for check-ptx, why no GPU here can JIT the wheel's PTX, or that no op has a cuda entry; for
    sanitize, that compute-sanitizer is not there."""
    for line in reversed(_tail(log).splitlines()):
        if line.startswith("error: "):
            return line.removeprefix("error: ").strip()
        if line.startswith("::error::"):  # a workflow command: %-escaped, one line
            first = line.removeprefix("::error::").split("%0A", 1)[0]
            return first.replace("%0D", "").replace("%25", "%").strip()
    return None


def unrun(stage: StagePlan, verdict: str, reason: str | None) -> StageResult:
    """The result of a stage that did not run: ``skipped`` (by plan) or ``not-run``."""
    return StageResult(
        name=stage.name,
        command=stage.argv,
        env=stage.env,
        cwd=stage.cwd,
        log=None,
        exit_code=None,
        verdict=verdict,
        reason=reason,
    )


def tell_unrun(result: StageResult, step: Step, emit: Emit) -> None:
    """A stage that did not run, told as its step's end: ``skipped (why)``, ``not-run (why)``."""
    step.ended(result.name, f"{result.verdict} ({result.reason})", None, emit)


def _tell(result: StageResult, step: Step, emit: Emit) -> None:
    """The stage's outcome as events: its log's tail when it failed, the verdict, the notes."""
    failed = bool(result.exit_code)
    if failed and result.log is not None:
        _replay(result.log, f"{result.name} log (tail)", emit)
    said = f"{result.verdict} (exit {result.raw_exit_code})"
    said += f": {result.reason}" if result.reason else ""
    step.ended(result.name, said, result.duration_s, emit, failed=failed)
    for note in result.notes:
        if note != result.reason:
            emit(Event(level="info", topic="gpu-run", message=f"{result.name}: {note}"))


def run_stage(
    stage: StagePlan,
    *,
    environ: Mapping[str, str],
    dist: Mapping[str, Any],
    emit: Emit = discard,
    step: Step = Step(),
) -> StageResult:
    """Run one stage (or record why it is skipped) and judge it; ``step``: its place in the
    run, for its progress events."""
    if stage.skipped is not None:
        result = unrun(stage, "skipped", stage.skipped)
        tell_unrun(result, step, emit)
        return result
    step.started(stage.name, f"running (log {stage.log})", emit)
    for stale in (stage.log, *stage.extra.values()):
        if stale.is_file():
            remove_file(stale.parent, stale.name)
    started = time.monotonic()
    raw = _run(stage.argv, env={**environ, **stage.env}, cwd=stage.cwd, log=stage.log)
    took = time.monotonic() - started
    code, notes, reason = _after(stage, stage_code(stage.name, raw), dist)
    result = StageResult(
        name=stage.name,
        command=stage.argv,
        env=stage.env,
        cwd=stage.cwd,
        log=stage.log,
        exit_code=code,
        raw_exit_code=raw,
        duration_s=took,
        verdict=VERDICTS[code],
        reason=reason,
        outputs=stage.outputs,
        notes=notes,
    )
    _tell(result, step, emit)
    return result
