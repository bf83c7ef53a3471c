"""Run a :class:`~cuship.builder.plan.BuildPlan`: its commands, then repair → retag → verify → smoke.

Output of each command is captured into the job's log and replayed (the compiler's own lines) when a
step fails. Writes go to a job's own directories; the finished wheel is moved into place last.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cuship import _read
from cuship._fs import remove_tree
from cuship.builder.archflags import NvccCalls, no_device_code, read_calls
from cuship.builder.archflags import describe as describe_calls
from cuship.builder.buildenv import env_site
from cuship.builder.host.interpreters import Interpreter
from cuship.builder.host.tools import start_sccache_server
from cuship.builder.model import BuildPlan, Step
from cuship.builder.reuse import key_parts, open_build_dir, seal
from cuship.builder.run.commands import BuildFailed, run_step
from cuship.builder.run.finish import finish_wheel, note, set_aside
from cuship.builder.run.job import JobSmoke, JobWork
from cuship.builder.run.shared import Locks, describe
from cuship.builder.run.smoke import Smoke, smoke_test
from cuship.errors import CushipError
from cuship.events import Emit, Event, discard
from cuship.tools import find_tool
from cuship.wheel.audit import WheelReport

__all__ = [
    "BuildFailed",
    "JobResult",
    "JobSmoke",
    "JobWork",
    "build_job",
    "run_plan",
    "run_step",
    "single_wheel",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class JobResult:
    job_id: str
    wheel: Path
    report: WheelReport
    verify_problems: tuple[str, ...]
    smoke: Smoke | None
    seconds: float
    python: Interpreter | None = None  # None: the running interpreter
    nvcc: NvccCalls | None = None  # what cuship's nvcc compiled (None: it was not used)

    def to_json(self) -> dict[str, object]:
        """The wheel, its inspection, the interpreter it built with and how its smoke test went
        (``--json`` of build and ship)."""
        import platform

        python = (
            self.python.to_json()
            if self.python is not None
            else {
                "version": platform.python_version(),
                "executable": sys.executable,
                "source": "running",
            }
        )
        smoke = self.smoke
        return {
            "wheel": str(self.wheel),
            "report": self.report.to_json(),
            "seconds": round(self.seconds, 2),
            "python": python,
            "smoke": smoke.said if smoke else None,
            "smoke_env": smoke.env if smoke else None,
            "smoke_note": smoke.note if smoke else None,
            "nvcc": self.nvcc.to_json() if self.nvcc else None,
        }


def single_wheel(directory: Path, job_id: str) -> Path:
    wheels = sorted(directory.glob("*.whl"))
    if len(wheels) != 1:
        raise BuildFailed(
            f"{job_id}: expected one wheel in {str(directory)!r}, found {len(wheels)}"
        )
    return wheels[0]


def run_plan(
    plan: BuildPlan,
    *,
    environ: Mapping[str, str] | None = None,
    emit: Emit = discard,
    locks: Locks | None = None,
) -> JobResult:
    """Build ``plan.job``: commands, repair, label, verify and smoke-import
    (``plan.test_import``, when set). Every job runs so: the matrix's and the CPU-only one
    (:func:`~cuship.builder.plan.plan_cpu`)."""
    if not plan.runnable:
        raise CushipError(f"{plan.job.id} cannot be built here: {plan.reason}")
    site_dirs = (env_site(plan.build_env, plan.python),) if plan.build_env and plan.python else ()
    kept = plan.build_dir
    key = functools.partial(key_parts, plan, os.environ if environ is None else environ)
    build_dir = (kept.path, key) if kept else None
    work = JobWork(
        job_id=plan.job.id,
        steps=plan.steps,
        raw_dir=plan.raw_dir,
        out_dir=plan.out_dir,
        log=plan.log,
        label=plan.job.label,
        arches=plan.job.arch.torch,
        test_import=plan.test_import,
        torch=plan.torch,
        floor=plan.glibc_floor,
        smoke=JobSmoke(python=plan.python, mode=plan.smoke, site_dirs=site_dirs),
        immutable=plan.inputs is not None and plan.tree is None,  # a released sdist's
        build_dir=build_dir,
        repairs=plan.repairs,
        gate=plan.gate,
    )
    return build_job(work, environ=environ, emit=emit, locks=locks)


def _step_event(job_id: str, name: str, description: str) -> Event:
    return Event(
        level="info",
        topic="build",
        message=f"{job_id}: {description}",
        data={"job": job_id, "step": name},
    )


def _run_steps(
    job_id: str,
    steps: Sequence[Step],
    log: Path,
    env: Mapping[str, str],
    caller_env: Mapping[str, str],
    emit: Emit,
    locks: Locks,
    build_dir: Path | None = None,
) -> bool:
    """Run the command steps; when the compiler cache itself fails, run them again without it
    (in an emptied ``build_dir``: CMake's cache would keep the launcher). False: they ran so.

    sccache is an accelerator, never a reason for a failed release: a server that cannot work
    (one started where ``TMPDIR`` has since been deleted answers every compile with "failed to
    write temporary file") is reported and bypassed. The server is started first from the
    caller's environment, so that no compile of this job starts it inside the job's temporary
    directory, which is removed when the job ends.
    """
    cached = [step for step in steps if step.argv and step.uses_compiler_cache]
    if cached:
        start_sccache_server(cached[0].env, caller_env)
    try:
        _in_turn(job_id, steps, log, env, emit, locks)
        return True
    except BuildFailed:
        said = _sccache_error(_read.read_tail(log))
        if not cached or said is None:
            raise
        emit(
            Event(
                level="warning",
                topic="build",
                message=f"{job_id}: the compiler cache failed ({said}); building again "
                "without it (a broken sccache server is fixed by `sccache --stop-server`)",
                data={"job": job_id, "sccache": said},
            )
        )
        note(log, f"cuship: sccache failed ({said}); the steps again without it")
        if build_dir is not None:
            remove_tree(build_dir.parent, build_dir.name)
        bare = [step.without_compiler_cache() for step in steps]
        _in_turn(job_id, bare, log, env, emit, locks, note=" (no compiler cache)")
        return False


def _in_turn(
    job_id: str,
    steps: Sequence[Step],
    log: Path,
    env: Mapping[str, str],
    emit: Emit,
    locks: Locks,
    note: str = "",
) -> None:
    """Run the command steps, each holding what it shares with other jobs (its ``holds``)."""
    with locks.spans(steps) as turns:
        for i, step in enumerate(steps):
            if not step.argv:
                continue
            turns.before(i, functools.partial(_waiting, job_id, step.name, emit))
            emit(_step_event(job_id, step.name, step.description + note))
            run_step(step, log, env, emit)
            if step.stamp and step.creates:
                Path(step.creates).touch()
            turns.after(i)


def _waiting(job_id: str, name: str, emit: Emit, key: str) -> None:
    emit(_step_event(job_id, name, f"waiting for {describe(key)} (another job uses it)"))


def _sccache_error(log: str) -> str | None:
    """The first error sccache itself printed ("sccache: error: ..." and its cause), if any."""
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if "sccache: error:" in line:
            said = line.split("sccache: error:", 1)[1].strip()
            cause = lines[i + 1] if i + 1 < len(lines) else ""
            if "sccache: caused by:" in cause:
                said += ": " + cause.split("sccache: caused by:", 1)[1].strip()
            return said
    return None


def _tell_nvcc(
    job_id: str, raw_dir: Path, arches: str, kept_dir: bool, log: Path, emit: Emit
) -> NvccCalls | None:
    """What cuship's nvcc log says the build compiled, told in the job's log and as an event."""
    nvcc = read_calls(raw_dir)
    if nvcc is None and kept_dir:
        note(log, f"cuship: {job_id}: nvcc compiled nothing (the kept build dir was up to date)")
    if nvcc is not None:
        said = f"{job_id}: {describe_calls(nvcc)}"
        with log.open("a", encoding="utf-8") as out:
            out.write(f"# cuship: {said}\n")
        quiet = nvcc.device or not arches
        if not quiet:
            said += (
                "; the build did not compile through CUDA_HOME's nvcc, so cuship could not "
                "hold it to [matrix] arch (verify checks the wheel)"
            )
        emit(
            Event(
                level="info" if quiet else "warning",
                topic="build",
                message=said,
                data={"nvcc": nvcc.to_json()},
            )
        )
    return nvcc


def _require_device_code(job_id: str, raw_dir: Path, gate: tuple[str, ...]) -> None:
    """Stop a CUDA job at the first sign that its build compiled no device code: cuship's nvcc
    saw no device compile by the end of the build step, and the raw wheel holds no SASS or PTX
    (a build that compiled through another nvcc is held to [matrix] arch by verify)."""
    from cuship.wheel.audit import inspect_wheel

    calls = read_calls(raw_dir)
    if calls is None or calls.device:
        return
    report = inspect_wheel(single_wheel(raw_dir, job_id))
    if report.sass or report.ptx:
        return
    raise BuildFailed(
        no_device_code(job_id, gate),
        hint="open the gate with [build] env, or set device_code = false for a CPU package",
    )


def build_job(
    work: JobWork,
    *,
    environ: Mapping[str, str] | None = None,
    emit: Emit = discard,
    locks: Locks | None = None,
) -> JobResult:
    """Run the job's steps, then finish, label and smoke-test the wheel.

    Shared by matrix jobs and the CPU-only job. Temporary files (``TMPDIR`` of the steps, the
    smoke venv) stay under ``raw_dir``. ``locks``: the batch's, when other jobs are built at the
    same time (see :mod:`cuship.builder.run.shared`). Whatever ends the job (a failure, an
    interrupt), it leaves no ``tmp`` behind.
    """
    import time

    start = time.perf_counter()
    caller = os.environ if environ is None else environ
    env = _fresh_dirs(work, caller)
    kept_dir = False
    if work.build_dir is not None:
        kept_dir, said = open_build_dir(work.build_dir[0], work.build_dir[1]())
        note(work.log, said)
    try:
        _compile(work, env, caller, emit, locks or Locks(), kept_dir=kept_dir)
        emit(_step_event(work.job_id, "repair", "repair, label and verify"))
        raw = single_wheel(work.raw_dir, work.job_id)
        wheel, report, problems = finish_wheel(raw, work, environ=env, emit=emit)
        nvcc = _tell_nvcc(work.job_id, work.raw_dir, work.arches, kept_dir, work.log, emit)
        tested = _smoke(work, wheel, report, env, emit) if work.test_import else None
        if problems:
            wheel = set_aside(wheel)
            report = dataclasses.replace(report, path=str(wheel))
        return JobResult(
            job_id=work.job_id,
            wheel=wheel,
            report=report,
            verify_problems=problems,
            smoke=tested,
            seconds=time.perf_counter() - start,
            python=work.smoke.python,
            nvcc=nvcc,
        )
    finally:
        remove_tree(work.raw_dir, "tmp")


def _fresh_dirs(work: JobWork, caller: Mapping[str, str]) -> dict[str, str]:
    """An empty ``raw_dir`` with its ``tmp``, an empty log; the steps' environment, whose
    ``TMPDIR`` is that ``tmp`` (pip, CMake, nvcc, auditwheel: nothing outside ``out_dir``)."""
    env = dict(caller)
    remove_tree(work.out_dir, work.raw_dir)
    (work.raw_dir / "tmp").mkdir(parents=True)
    env["TMPDIR"] = str(work.raw_dir / "tmp")
    work.log.parent.mkdir(parents=True, exist_ok=True)
    work.log.write_text("", encoding="utf-8")
    return env


def _compile(
    work: JobWork,
    env: Mapping[str, str],
    caller: Mapping[str, str],
    emit: Emit,
    locks: Locks,
    *,
    kept_dir: bool,
) -> None:
    """The job's command steps; the build directory sealed after them; a CUDA job stopped when
    its build compiled no device code."""
    kept = work.build_dir[0] if work.build_dir else None
    ran = _run_steps(work.job_id, work.steps, work.log, env, caller, emit, locks, kept)
    if ran and work.build_dir:
        seal(work.build_dir[0], work.build_dir[1]())
    if work.arches and not kept_dir:
        _require_device_code(work.job_id, work.raw_dir, work.gate)


def _smoke(
    work: JobWork, wheel: Path, report: WheelReport, env: Mapping[str, str], emit: Emit
) -> Smoke:
    """Import ``work.test_import`` from the finished wheel in a fresh venv; a wheel that fails
    is set aside."""
    emit(_step_event(work.job_id, "smoke", f"import {work.test_import} in a fresh venv"))
    linked = report.torch_abi != "none"
    try:
        uv = find_tool("uv", env).path
        return smoke_test(wheel, work, links_torch=linked, environ=env, emit=emit, uv=uv)
    except CushipError as err:
        kept = set_aside(wheel)
        raise BuildFailed(
            f"{err}\n(the wheel is kept apart as {kept}; `cuship index` never publishes it)",
            hint=err.hint,
        ) from err
