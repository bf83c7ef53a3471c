"""Run a :class:`~cuship.build.plan.BuildPlan`: its commands, then repair → retag → verify → smoke.

Output of each command is captured into the job's log and replayed (the compiler's own lines) when a
step fails. Writes go to a job's own directories; the finished wheel is moved into place last.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import parse_wheel_filename

from cuship.build.plan import BuildPlan, Step
from cuship.errors import CheckFailed, CushipError
from cuship.events import Emit, Event, discard
from cuship.wheel.audit import WheelReport

__all__ = [
    "BuildFailed",
    "JobResult",
    "build_job",
    "finish_wheel",
    "run_plan",
    "run_step",
    "single_wheel",
]

# compiler diagnostics first ("ops.cu(193): error: ...", "x.cpp:3:1: error: ..."), then any error line
_DIAGNOSTIC = re.compile(r"(\(\d+\)|:\d+(:\d+)?):\s*(fatal )?error|CMake Error|undefined reference")
_ERROR_LINE = re.compile(r"\b(error|ERROR|fatal)\b")


class BuildFailed(CheckFailed):
    """A build step failed; the message carries the tool's own error lines."""


@dataclass(frozen=True, slots=True, kw_only=True)
class JobResult:
    job_id: str
    wheel: Path
    report: WheelReport
    verify_problems: tuple[str, ...]
    smoke: str | None
    seconds: float


def _error_excerpt(log: str, limit: int = 25) -> str:
    """The tool's own error lines: compiler diagnostics with two lines of context, else error lines."""
    lines = log.splitlines()
    hits = [i for i, line in enumerate(lines) if _DIAGNOSTIC.search(line)]
    if hits:
        picked = sorted({j for i in hits for j in range(i, min(i + 3, len(lines)))})
        return "\n".join(lines[j].strip() for j in picked[:limit])
    errors = [line.strip() for line in lines if _ERROR_LINE.search(line)]
    return "\n".join(errors[:limit] or lines[-limit:])


def run_step(step: Step, log_path: Path, environ: Mapping[str, str], emit: Emit = discard) -> str:
    """Run one command step, appending its output to ``log_path``; raise BuildFailed on failure."""
    env = {**environ, **step.env}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    emit(Event(level="debug", topic="build", message=step.shell()))
    try:
        done = subprocess.run(
            list(step.argv), env=env, cwd=step.cwd, capture_output=True, text=True, check=False
        )
    except OSError as err:  # missing, not executable, no such working directory
        raise BuildFailed(
            f"{step.name}: cannot run {step.argv[0]!r}: {err.strerror or err}",
            hint=f"check that {step.argv[0]!r} is installed and executable"
            + (f" and that {step.cwd!r} exists" if step.cwd else ""),
        ) from err
    output = done.stdout + done.stderr
    with log_path.open("a", encoding="utf-8") as log:
        log.write(f"$ {step.shell()}\n{output}\n")
    if done.returncode != 0:
        raise BuildFailed(
            f"{step.name} failed (exit {done.returncode}); the tool said:\n{_error_excerpt(output)}",
            hint=f"full log: {log_path}",
        )
    return output


def single_wheel(directory: Path, job_id: str) -> Path:
    wheels = sorted(directory.glob("*.whl"))
    if len(wheels) != 1:
        raise BuildFailed(
            f"{job_id}: expected one wheel in {str(directory)!r}, found {len(wheels)}"
        )
    return wheels[0]


def finish_wheel(
    raw: Path,
    *,
    work_dir: Path,
    out_dir: Path,
    label: str,
    arches: str,
    environ: Mapping[str, str],
    emit: Emit = discard,
) -> tuple[Path, WheelReport, tuple[str, ...]]:
    """Repair (unless pure), label, inspect and verify ``raw``; the final wheel lands in ``out_dir``.

    ``arches`` is the arch spec the wheel must cover; empty for a CPU-only wheel, which must then
    hold no device code at all.
    """
    from cuship.wheel.audit import inspect_wheel
    from cuship.wheel.repair import repair
    from cuship.wheel.retag import retag
    from cuship.wheel.verify import verify

    work = work_dir / "repaired"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    _, _, _, tags = parse_wheel_filename(raw.name)
    if all(tag.platform == "any" for tag in tags):
        emit(
            Event(
                level="warning" if arches else "info",
                topic="build",
                message=f"{raw.name}: a pure wheel, nothing to repair",
            )
        )
        repaired = raw
    else:
        repaired = repair(raw, out_dir=work, env=environ, emit=emit).output
    labelled = retag(repaired, local=label, out_dir=work_dir / "labelled", emit=emit)
    report = inspect_wheel(labelled)
    problems = verify(report, arches=arches, local=label).problems
    if not arches:
        problems += tuple(
            f"{x.path}: CUDA device code in a CPU-only wheel"
            for x in report.extensions
            if x.sass or x.ptx
        )
    final = out_dir / labelled.name
    labelled.replace(final)
    return final, dataclasses.replace(report, path=str(final)), problems


def run_plan(
    plan: BuildPlan,
    *,
    environ: Mapping[str, str] | None = None,
    test_import: str | None = None,
    emit: Emit = discard,
) -> JobResult:
    """Build ``plan.job``: commands, repair, label, verify and (optionally) smoke-import."""
    if not plan.runnable:
        raise CushipError(f"{plan.job.id} cannot be built here: {plan.reason}")
    return build_job(
        plan.job.id,
        plan.steps,
        raw_dir=plan.raw_dir,
        out_dir=plan.out_dir,
        log=plan.log,
        label=plan.job.label,
        arches=plan.job.arch.torch,
        test_import=test_import,
        environ=environ,
        emit=emit,
    )


def build_job(
    job_id: str,
    steps: Sequence[Step],
    *,
    raw_dir: Path,
    out_dir: Path,
    log: Path,
    label: str,
    arches: str,
    test_import: str | None,
    environ: Mapping[str, str] | None = None,
    emit: Emit = discard,
) -> JobResult:
    """Run ``steps`` (a fresh ``raw_dir`` and log), then finish, label and smoke-test the wheel.

    Shared by matrix jobs and the CPU-only job; ``arches`` empty means "no device code".
    """
    import time

    env = dict(os.environ if environ is None else environ)
    start = time.perf_counter()
    shutil.rmtree(raw_dir, ignore_errors=True)
    raw_dir.mkdir(parents=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("", encoding="utf-8")
    for step in steps:
        if step.argv:
            emit(Event(level="info", topic="build", message=f"{job_id}: {step.description}"))
            run_step(step, log, env, emit)
    wheel, report, problems = finish_wheel(
        single_wheel(raw_dir, job_id),
        work_dir=raw_dir,
        out_dir=out_dir,
        label=label,
        arches=arches,
        environ=env,
        emit=emit,
    )
    smoke = None
    if test_import:
        from cuship.build.smoke import smoke_test

        smoke = smoke_test(wheel, test_import, log=log, environ=env)
    return JobResult(
        job_id=job_id,
        wheel=wheel,
        report=report,
        verify_problems=problems,
        smoke=smoke,
        seconds=time.perf_counter() - start,
    )
