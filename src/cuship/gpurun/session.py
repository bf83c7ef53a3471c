"""One ``cuship gpu-run`` from request to report.

Order, so that the cheapest and most fundamental problem is reported first and nothing is
installed on a machine that cannot run the stages:

1. the project's config and the wheel files (exit 2 on a bad PATH or ``--wheels``);
2. the machine: no GPU is exit 3, before anything is installed;
3. the interpreter the wheel is for (its tags, Python, torch; pip and pytest present, else 3);
4. the wheel that fits (none: exit 1, each wheel listed with why it was rejected);
5. install, verify, run the stages (:mod:`cuship.gpurun.execute`), write ``gpu-run.json``.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cuship import settings
from cuship._fs import write_atomic, write_json
from cuship.errors import ToolMissing, UsageError
from cuship.events import Emit, Event, discard
from cuship.gpurun.execute import Step, install, probe, run_stage, tell_unrun, unrun
from cuship.gpurun.plan import (
    Inside,
    ProjectFacts,
    StagePlan,
    plan_install,
    plan_stages,
    project_facts,
    stage_env,
)
from cuship.gpurun.results import GpuRunReport, InstallResult, StageResult
from cuship.gpurun.wheels import LocalWheels, WheelChoice, choose, read_wheels
from cuship.machine import Fingerprint

if TYPE_CHECKING:
    from cuship.judge.offer import TorchBuild

__all__ = ["GpuRunRequest", "gpu_run", "gpu_run_request", "machine_json", "require_gpu"]

SUMMARY = "gpu-run.json"


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuRunRequest:
    """What ``cuship gpu-run`` was asked."""

    path: Path
    wheels: tuple[Path, ...]
    results: Path
    in_place: bool = False
    python: str | None = None  # default: the interpreter running cuship
    venv: Path | None = None  # default: RESULTS/venv
    skip_bench: bool = False
    profile: str | None = None  # "ncu": the bench stage runs with --profile ncu
    skip_sanitize: bool = False
    skip_ptx: bool = False  # no check-ptx stage (the quick check under CUDA_FORCE_PTX_JIT=1)


def _split(args: Sequence[Path], wheels: Sequence[Path]) -> tuple[Path, tuple[Path, ...]]:
    """PATH and the wheels: extra ``.whl`` arguments are wheels (``--wheels dist/*.whl``)."""
    more = tuple(a for a in args if a.name.endswith(".whl"))
    paths = [a for a in args if not a.name.endswith(".whl")]
    if len(paths) > 1:
        shown = ", ".join(repr(str(p)) for p in paths)
        raise UsageError(f"one project PATH, got {shown}", hint="cuship gpu-run PATH --wheels DIR")
    if not wheels:
        raise UsageError(
            "--wheels is required", hint="cuship gpu-run PATH --wheels DIR (or wheel files)"
        )
    return (paths[0] if paths else Path()), (*wheels, *more)


def gpu_run_request(
    args: Sequence[Path],
    *,
    wheels: Sequence[Path],
    results: Path,
    in_place: bool = False,
    python: str | None = None,
    venv: Path | None = None,
    skip_bench: bool = False,
    profile: str | None = None,
    skip_sanitize: bool = False,
    skip_ptx: bool = False,
) -> GpuRunRequest:
    """The request ``cuship gpu-run ARGS`` makes, or a UsageError: one project PATH among
    ``args`` (the ``.whl`` files among them join ``wheels``), ``--wheels`` given, and
    ``--venv`` and ``--in-place`` not both."""
    if in_place and venv is not None:
        raise UsageError("--venv and --in-place exclude each other", hint="pick one")
    path, wheel_inputs = _split(args, wheels)
    return GpuRunRequest(
        path=path,
        wheels=wheel_inputs,
        results=results,
        in_place=in_place,
        python=python,
        venv=venv,
        skip_bench=skip_bench,
        profile=profile,
        skip_sanitize=skip_sanitize,
        skip_ptx=skip_ptx,
    )


def interpreter_path(python: str | None) -> str:
    """The interpreter to use, as an absolute path (default: the one running cuship)."""
    if python is None:
        return sys.executable
    found = shutil.which(python)
    if found is None:
        raise UsageError(
            f"--python: no interpreter at {python!r}", hint="give a path or a name on PATH"
        )
    return str(Path(found).absolute())


def require_gpu(fp: Fingerprint) -> None:
    """:class:`ToolMissing` (exit 3) when this machine shows no GPU."""
    if not fp.gpus:
        raise ToolMissing(
            "no CUDA GPU on this machine (no NVML, nvidia-smi or /proc/driver/nvidia GPU): "
            "gpu-run installs nothing and runs nothing here",
            hint="run it on a GPU runner with the NVIDIA driver loaded; CUSHIP_GPUS=H100 fakes "
            "a GPU for a dry run of the stages",
        )


def machine_json(fp: Fingerprint) -> dict[str, Any]:
    """The machine part of ``gpu-run.json``."""
    return {
        "gpus": [
            {"name": g.name, "cc": g.cc, "memory_gib": g.memory_gib, "uuid": g.uuid}
            for g in fp.gpus
        ],
        "gpu_source": fp.gpu_source,
        "gpu_faked": fp.gpu_source == "override",
        "driver_version": fp.driver_version,
        "driver_cuda": fp.driver_cuda,
        "toolkit": fp.toolkit.version if fp.toolkit else None,
        "torch": fp.torch.version if fp.torch else None,
    }


def _with_pytest(inside: Inside) -> Inside:
    if not inside.interpreter.has("pytest"):
        raise ToolMissing(
            f"pytest is not installed for {inside.interpreter.executable!r}",
            hint="install pytest there (a gpu-run venv sees that interpreter's packages)",
        )
    return inside


def _choose(
    name: str, wheels: LocalWheels, fp: Fingerprint, inside: Inside, emit: Emit
) -> WheelChoice:
    from cuship.resolve.model import target_of

    python = inside.interpreter
    target = target_of(fp, tags=python.tags, python=python.python)
    target = replace(target, offer=replace(target.offer, torch=_venv_torch(fp, inside)))
    choice = choose(name, wheels, target)
    message = f"wheel: {choice.path.name} ({choice.to_json()['why']})"
    emit(Event(level="info", topic="gpu-run", message=message))
    for verdict in choice.resolution.rejected:
        line = f"passed over {verdict.candidate.filename}: {verdict.rule}: {verdict.reason}"
        emit(Event(level="debug", topic="gpu-run", message=line))
    return choice


def _venv_torch(fp: Fingerprint, inside: Inside) -> TorchBuild | None:
    """The torch the run's interpreter imports (its version and C++ ABI, from the probe), of the
    build the machine's own torch is (flavour, CUDA); None: that interpreter has no torch."""
    from cuship.judge.offer import TorchBuild

    seen = inside.torch or {}
    version = seen.get("version")
    if version is None:
        return None
    return TorchBuild(
        version=version,
        flavour=fp.torch.flavour if fp.torch else None,
        cuda=fp.torch.cuda if fp.torch else None,
        cxx11abi=seen.get("cxx11abi"),
    )


def _faked(fp: Fingerprint, environ: Mapping[str, str], emit: Emit) -> tuple[str, ...]:
    if fp.gpu_source != "override":
        return ()
    note = (
        f"the GPU is faked (CUSHIP_GPUS={environ.get(settings.GPUS, '')!r}): the stages run "
        "against that claim, so this is a dry run, not evidence of a GPU run"
    )
    emit(Event(level="warning", topic="gpu-run", message=note))
    return (note,)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Ready:
    """Everything decided before anything is installed."""

    project: ProjectFacts
    fingerprint: Fingerprint
    results: Path
    env: Mapping[str, str]
    base: Inside
    choice: WheelChoice
    venv: Path | None
    notes: tuple[str, ...]


def _prepare(request: GpuRunRequest, environ: Mapping[str, str], emit: Emit) -> _Ready:
    from cuship.config import load_config
    from cuship.machine import fingerprint

    project = project_facts(load_config(request.path))
    wheels = read_wheels(request.wheels, emit=emit)  # bad input is exit 2, before the machine
    python = interpreter_path(request.python)
    fp = fingerprint(environ)
    require_gpu(fp)
    notes = _faked(fp, environ, emit)
    results = request.results.resolve()
    venv = None if request.in_place else (request.venv or results / "venv").resolve()
    env = {**environ, **stage_env(results, environ)}
    base = probe(python, env=env, cwd=project.root, venv=venv)
    choice = _choose(project.name, wheels, fp, base, emit)
    results.mkdir(parents=True, exist_ok=True)  # only now that something will run
    return _Ready(
        project=project,
        fingerprint=fp,
        results=results,
        env=env,
        base=base,
        choice=choice,
        venv=venv,
        notes=notes,
    )


def _stages(
    ready: _Ready, python: str, request: GpuRunRequest, environ: Mapping[str, str]
) -> tuple[StagePlan, ...]:
    return tuple(
        plan_stages(
            ready.project,
            python,
            ready.results,
            environ=environ,
            skip_bench=request.skip_bench,
            profile=request.profile,
            skip_sanitize=request.skip_sanitize,
            gpu_faked=ready.fingerprint.gpu_source == "override",
            skip_ptx=request.skip_ptx,
            wheel=ready.choice.verdict.candidate.facts,
        )
    )


def _run_stages(
    stages: Sequence[StagePlan],
    installed: InstallResult,
    environ: Mapping[str, str],
    emit: Emit,
) -> tuple[StageResult, ...]:
    """Each stage after the install, step 2 on of 1 + len(stages)."""
    total, results = 1 + len(stages), []
    dist = installed.dist or {}
    for number, stage in enumerate(stages, start=2):
        step = Step(number, total)
        if installed.exit_code:
            result = unrun(stage, "not-run", f"the install step: {installed.verdict}")
            tell_unrun(result, step, emit)
        else:
            result = run_stage(stage, environ=environ, dist=dist, emit=emit, step=step)
        results.append(result)
    return tuple(results)


def gpu_run(
    request: GpuRunRequest, *, environ: Mapping[str, str], emit: Emit = discard
) -> GpuRunReport:
    """Choose, install and test the wheel on this GPU machine; write ``RESULTS/gpu-run.json``."""
    started, clock = datetime.now(timezone.utc).isoformat(timespec="seconds"), time.monotonic()
    ready = _prepare(request, environ, emit)
    base = _with_pytest(ready.base)
    plan = plan_install(ready.choice.path, base, in_place=request.in_place, venv=ready.venv)
    stages = _stages(ready, plan.python, request, environ)
    installed = install(
        plan,
        ready.choice.path,
        ready.project.name,
        env=ready.env,
        cwd=ready.project.root,
        log=ready.results / "install.log",
        emit=emit,
        step=Step(1, 1 + len(stages)),
    )
    report = GpuRunReport(
        project=ready.project.root,
        name=ready.project.name,
        results=ready.results,
        machine={**machine_json(ready.fingerprint), "python": ready.base.interpreter.python},
        wheel=ready.choice.to_json(),
        install=installed,
        stages=_run_stages(stages, installed, environ, emit),
        started=started,
        duration_s=time.monotonic() - clock,
        notes=ready.notes,
    )
    write_json(ready.results / SUMMARY, report.to_json(), default=str)
    write_atomic(ready.results / "gpu-run.txt", report.to_text().encode("utf-8"))
    return report
