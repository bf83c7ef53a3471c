"""Run a :class:`~cuship.builder.plan.BuildPlan`: its commands, then repair → retag → verify → smoke.

Output of each command is captured into the job's log and replayed (the compiler's own lines) when a
step fails. Writes go to a job's own directories; the finished wheel is moved into place last.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import parse_wheel_filename

from cuship.builder.archflags import NvccCalls, read_calls
from cuship.builder.archflags import describe as describe_calls
from cuship.builder.buildenv import env_site
from cuship.builder.glibc import GlibcFloor
from cuship.builder.host.interpreters import Interpreter
from cuship.builder.host.tools import start_sccache_server
from cuship.builder.model import BuildPlan, Step
from cuship.builder.reuse import key_parts, open_build_dir, seal
from cuship.builder.run.commands import BuildFailed, run_step
from cuship.builder.run.shared import Locks, describe
from cuship.builder.run.smoke import Smoke, SmokeMode, smoke_test
from cuship.errors import CushipError
from cuship.events import Emit, Event, discard
from cuship.tools import find_tool
from cuship.wheel.audit import WheelReport
from cuship.wheel.torchabi import TorchAbi, pin_for

__all__ = [
    "BuildFailed",
    "JobResult",
    "JobSmoke",
    "build_job",
    "finish_wheel",
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


FAILED = "failed"
"""The folder under the output directory where a failed job's wheel is kept, out of the index."""


def set_aside(wheel: Path) -> Path:
    """Move the wheel of a failed job to ``failed/`` beside it: kept to look at, never indexed
    (``cuship index`` reads only the output directory's own wheels)."""
    folder = wheel.parent / FAILED
    folder.mkdir(exist_ok=True)
    kept = folder / wheel.name
    wheel.replace(kept)
    return kept


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
    torch: str | None = None,
    floor: GlibcFloor | None = None,
    emit: Emit = discard,
    immutable: bool = False,
    repairs: Path | None = None,
    log: Path | None = None,
) -> tuple[Path, WheelReport, tuple[str, ...]]:
    """Repair (unless pure), label, inspect and verify ``raw``; the final wheel lands in ``out_dir``.

    ``arches`` is the arch spec the wheel must cover; empty for a CPU-only wheel, which must then
    hold no device code at all. ``torch``: the torch it was built against; a wheel that links
    torch gets the pin its torch ABI needs (``torch==X.Y.*`` exact, ``torch>=X.Y`` stable).
    ``floor``: the glibc floor it is verified against when enforced, else warned against.
    ``immutable``: a wheel of the same name already in ``out_dir`` must not change its bytes
    (a released sdist's wheel, which may be published): a build that differs is refused and
    kept apart, the earlier wheel stays. ``repairs``: where repairs are kept to be reused for
    the same raw wheel (see :func:`~cuship.wheel.write.repair.repair`). ``log``: the job log, given the
    time of each of these steps.
    """
    import time

    from cuship.judge.verify import verify
    from cuship.wheel.audit import inspect_wheel
    from cuship.wheel.write.repair import repair
    from cuship.wheel.write.retag import retag

    work = work_dir / "repaired"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    start = time.perf_counter()
    _, _, _, tags = parse_wheel_filename(raw.name)
    if all(tag.platform == "any" for tag in tags):
        emit(
            Event(
                level="warning" if arches else "info",
                topic="build",
                message=f"{raw.name}: a pure wheel, nothing to repair",
            )
        )
        repaired, said = raw, "a pure wheel, nothing to repair"
    else:
        done = repair(raw, out_dir=work, env=environ, emit=emit, cache=repairs)
        repaired, said = done.output, f"reused {done.reused}" if done.reused else "done"
    start = _timed(log, "repair", said, start)
    requires, unpinned = _torch_pin(inspect_wheel(repaired).torch_abi, torch, repaired.name)
    labelled = retag(
        repaired, local=label, out_dir=work_dir / "labelled", requires=requires, emit=emit
    )
    start = _timed(log, "retag", "done", start)
    report = inspect_wheel(labelled)
    enforced = floor.floor if floor is not None and floor.enforced else None
    checked = verify(report, arches=arches, local=label, torch=torch, manylinux=enforced)
    _timed(log, "verify", "done", start)
    problems = unpinned + checked.problems
    extra = _extra_sass(report, arches)
    if extra:
        emit(
            Event(
                level="warning",
                topic="build",
                message=f"{labelled.name}: holds SASS for {', '.join(extra)} beyond [matrix] "
                "arch: the build passed its own arch flags ([build] arch_flags = 'rewrite' "
                "compiles only the configured ones)",
            )
        )
    if floor is not None and not floor.enforced:
        _warn_floor(report, floor, emit)
    if not arches:
        problems += tuple(
            f"{x.path}: CUDA device code in a CPU-only wheel"
            for x in report.extensions
            if x.sass or x.ptx
        )
    final = out_dir / labelled.name
    if immutable:
        _refuse_changed(labelled, final)
    labelled.replace(final)
    return final, dataclasses.replace(report, path=str(final)), problems


def _timed(log: Path | None, name: str, said: str, start: float) -> float:
    """Write ``# name: said in N s`` (since ``start``) to ``log``; the time now."""
    import time

    now = time.perf_counter()
    if log is not None:
        _note(log, f"{name}: {said} in {now - start:.1f} s")
    return now


def _note(log: Path, line: str) -> None:
    with log.open("a", encoding="utf-8") as out:
        out.write(f"# {line}\n")


def _refuse_changed(new: Path, final: Path) -> None:
    """Raise when ``final`` exists with other bytes than ``new`` (moved to ``failed/``)."""
    from cuship._fs import sha256_file

    if not final.is_file():
        return
    before, now = sha256_file(final), sha256_file(new)
    if before == now:
        return
    aside = final.parent / FAILED / final.name
    aside.parent.mkdir(parents=True, exist_ok=True)
    new.replace(aside)
    raise BuildFailed(
        f"{final.name}: this build differs from the wheel of that name built before "
        f"(sha256 {before[:12]}... now {now[:12]}...); a wheel of a released sdist keeps its "
        f"bytes under its name, as an index that published it must. The earlier wheel stays; "
        f"this one is kept apart as {aside}",
        hint="publish the new build under a new name (a new version of the package), or "
        "delete the earlier wheel yourself if it was never published",
    )


def _extra_sass(report: WheelReport, arches: str) -> list[str]:
    """SASS the wheel's own objects hold that the job's arch list did not ask for."""
    from cuship.arch import parse_arch_list

    if not arches.strip():
        return []
    asked = {t.sm for t in parse_arch_list(arches).targets if t.sass}
    return [f"sm_{sm}" for sm in report.sass if sm not in asked]


def _warn_floor(report: WheelReport, floor: GlibcFloor, emit: Emit) -> None:
    """Say so when a wheel is above a floor that is not enforced, and what that costs."""
    from cuship.wheel.manylinux import floor_problem, parse_floor

    problem = floor_problem(report, parse_floor(floor.floor))
    if problem is None:
        return
    message = (
        f"{report.filename}: {problem}. Users with an older glibc cannot install it "
        f"(this floor is {floor.why}; set [build] manylinux to make it a verification failure)"
    )
    emit(Event(level="warning", topic="build", message=message, data={"floor": floor.floor}))


def _torch_pin(
    abi: TorchAbi, torch: str | None, name: str
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(requirements to write, problems): the pin ``abi`` needs, or why there can be none."""
    if abi == "none":
        return (), ()
    if torch is None:
        return (), (
            f"{name} links torch ({abi} ABI) but the torch it builds against is unknown, so it "
            "cannot be pinned: add torch to [matrix] torch, or build without isolation",
        )
    pin = pin_for(abi, torch)
    return ((pin,) if pin else ()), ()


def run_plan(
    plan: BuildPlan,
    *,
    environ: Mapping[str, str] | None = None,
    test_import: str | None = None,
    emit: Emit = discard,
    locks: Locks | None = None,
) -> JobResult:
    """Build ``plan.job``: commands, repair, label, verify and (optionally) smoke-import."""
    if not plan.runnable:
        raise CushipError(f"{plan.job.id} cannot be built here: {plan.reason}")
    site_dirs = (env_site(plan.build_env, plan.python),) if plan.build_env and plan.python else ()
    kept = plan.build_dir
    key = functools.partial(key_parts, plan, os.environ if environ is None else environ)
    build_dir = (kept.path, key) if kept else None
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
        torch=plan.torch,
        floor=plan.glibc_floor,
        emit=emit,
        smoke=JobSmoke(python=plan.python, mode=plan.smoke, site_dirs=site_dirs),
        locks=locks,
        immutable=plan.inputs is not None,
        build_dir=build_dir,
        repairs=plan.repairs,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class JobSmoke:
    """How a job's smoke test runs: with which interpreter (None: the running one), in which
    venv (``[build] smoke``), seeing which builder site-packages when it falls back."""

    python: Interpreter | None = None
    mode: SmokeMode = "auto"
    site_dirs: tuple[str, ...] = ()


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
        said = _sccache_error(log.read_text(encoding="utf-8", errors="replace"))
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
        _note(log, f"cuship: sccache failed ({said}); the steps again without it")
        if build_dir is not None:
            shutil.rmtree(build_dir, ignore_errors=True)
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
    torch: str | None = None,
    floor: GlibcFloor | None = None,
    emit: Emit = discard,
    smoke: JobSmoke | None = None,
    locks: Locks | None = None,
    immutable: bool = False,
    build_dir: tuple[Path, Callable[[], Mapping[str, str]]] | None = None,
    repairs: Path | None = None,
) -> JobResult:
    """Run ``steps`` (a fresh ``raw_dir`` and log), then finish, label and smoke-test the wheel.

    Shared by matrix jobs and the CPU-only job; ``arches`` empty means "no device code".
    Temporary files (``TMPDIR`` of the steps, the smoke venv) stay under ``raw_dir``. ``locks``:
    the batch's, when other jobs are built at the same time (see :mod:`cuship.builder.run.shared`).
    ``build_dir``: the CMake build directory the steps use and how to read its key (before the
    steps, to open it; after them, to seal it: a build venv's packages are installed by the
    steps), kept for a rebuild when the key holds (see :mod:`cuship.builder.reuse`);
    ``repairs``: see :func:`finish_wheel`.
    """
    import time

    env = dict(os.environ if environ is None else environ)
    smoke = smoke or JobSmoke()
    start = time.perf_counter()
    shutil.rmtree(raw_dir, ignore_errors=True)
    (raw_dir / "tmp").mkdir(parents=True)
    env["TMPDIR"] = str(raw_dir / "tmp")  # pip, CMake, nvcc, auditwheel: nothing outside out_dir
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("", encoding="utf-8")
    caller = os.environ if environ is None else environ
    kept_dir = False
    if build_dir is not None:
        kept_dir, said = open_build_dir(build_dir[0], build_dir[1]())
        _note(log, said)
    kept = build_dir[0] if build_dir else None
    if _run_steps(job_id, steps, log, env, caller, emit, locks or Locks(), kept) and build_dir:
        seal(build_dir[0], build_dir[1]())
    emit(_step_event(job_id, "repair", "repair, label and verify"))
    wheel, report, problems = finish_wheel(
        single_wheel(raw_dir, job_id),
        work_dir=raw_dir,
        out_dir=out_dir,
        label=label,
        arches=arches,
        environ=env,
        torch=torch,
        floor=floor,
        emit=emit,
        immutable=immutable,
        repairs=repairs,
        log=log,
    )
    nvcc = read_calls(raw_dir)
    if nvcc is None and kept_dir:
        _note(log, f"cuship: {job_id}: nvcc compiled nothing (the kept build dir was up to date)")
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
    tested = None
    if test_import:
        python = smoke.python.executable if smoke.python else sys.executable
        emit(_step_event(job_id, "smoke", f"import {test_import} in a fresh venv"))
        linked = report.torch_abi != "none"
        try:
            tested = smoke_test(
                wheel,
                test_import,
                log=log,
                environ=env,
                python=python,
                work_dir=raw_dir / "tmp",
                mode=smoke.mode,
                site_dirs=smoke.site_dirs,
                emit=emit,
                uv=find_tool("uv", env).path,
                torch=(torch or "unknown") if linked else None,
            )
        except CushipError as err:
            kept = set_aside(wheel)
            raise BuildFailed(
                f"{err}\n(the wheel is kept apart as {kept}; `cuship index` never publishes it)",
                hint=err.hint,
            ) from err
    shutil.rmtree(raw_dir / "tmp", ignore_errors=True)
    if problems:
        wheel = set_aside(wheel)
        report = dataclasses.replace(report, path=str(wheel))
    return JobResult(
        job_id=job_id,
        wheel=wheel,
        report=report,
        verify_problems=problems,
        smoke=tested,
        seconds=time.perf_counter() - start,
        python=smoke.python,
        nvcc=nvcc,
    )
