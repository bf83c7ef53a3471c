"""One ``cuship check`` run from request to report: project, ops, plan, workers, baseline, store."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from cuship.check.case.engines import Device
from cuship.check.declare.project import CheckProject, find_project
from cuship.check.declare.registry import Op, discover
from cuship.check.report.baseline import ErrorBaseline, from_report, regressions, require_comparable
from cuship.check.report.baseline import load as load_baseline
from cuship.check.report.baseline import save as save_baseline
from cuship.check.report.results import CheckReport, code_env
from cuship.check.run.availability import Unavailable, missing_module
from cuship.check.run.probe import EngineProbe
from cuship.check.run.runner import (
    CheckSettings,
    Plan,
    execute,
    lane_count,
    plan,
    runnable_engines,
    setup_for,
    skip_unavailable,
)
from cuship.check.run.workers import WorkerSetup
from cuship.errors import InputError, ToolMissing, UsageError
from cuship.events import Emit, Event, Level, discard
from cuship.provenance import Provenance, require_built

__all__ = ["CheckRequest", "engines_required", "record", "require_engines", "run_check"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckRequest:
    """What ``cuship check`` was asked; None means "as configured"."""

    path: Path
    target: str
    device: Device = "cpu"
    quick: bool = False
    ops: tuple[str, ...] = ()
    engines: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()
    case: int | None = None
    seed: int | None = None
    include_broken: bool = False
    parallel: int | None = None
    baseline: Path | None = None
    save_baseline: Path | None = None
    fail_on_regression: bool = False
    store: bool = True
    installed: bool = False  # import the project's package as installed, never from its source
    sanitize: tuple[str, ...] = ()  # compute-sanitizer tools to run the GPU engines' cases under
    force_ptx: bool = False  # run the extension's PTX under CUDA_FORCE_PTX_JIT=1
    # Fail (exit 3) when an engine the selected ops need cannot run; None: when ``CI`` is set.
    require_engines: bool | None = None
    # The user's working directory: the workers run there (a relative PYTHONPATH entry is read
    # against it); None: the project root.
    cwd: Path | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckFlags:
    """``cuship check``'s options, named as its flags are, before their rules are applied."""

    quick: bool = False
    device: str = "auto"
    ops: Sequence[str] = ()
    engines: Sequence[str] = ()
    dtypes: Sequence[str] = ()
    case: int | None = None
    seed: int | None = None
    include_broken: bool = False
    parallel: int | None = None
    baseline: Path | None = None
    save_baseline: Path | None = None
    fail_on_regression: bool = False
    require_engines: bool | None = None
    no_store: bool = False
    installed: bool = False
    sanitize: str | None = None  # compute-sanitizer tools, comma-separated, or "all"
    force_ptx: bool = False


def check_request(
    path: Path, flags: CheckFlags, *, environ: Mapping[str, str], cwd: Path
) -> CheckRequest:
    """The request ``cuship check``'s flags make: the sanitizer tools parsed, the device chosen
    (``auto``: a GPU when one is here and an engine can use it), the store on unless
    ``--no-store``; a UsageError names a bad tool."""
    from cuship.check.run.device import choose_device
    from cuship.check.sanitize.tools import parse_tools

    sanitize = parse_tools(flags.sanitize) if flags.sanitize is not None else ()
    engines = tuple(flags.engines)
    device = choose_device(
        flags.device, environ, engines=engines, force_ptx=flags.force_ptx, sanitize=bool(sanitize)
    )
    return CheckRequest(
        target=str(path),
        path=path,
        quick=flags.quick,
        device=device,
        ops=tuple(flags.ops),
        engines=engines,
        dtypes=tuple(flags.dtypes),
        case=flags.case,
        seed=flags.seed,
        include_broken=flags.include_broken,
        parallel=flags.parallel,
        baseline=flags.baseline,
        save_baseline=flags.save_baseline,
        fail_on_regression=flags.fail_on_regression,
        require_engines=flags.require_engines,
        store=not flags.no_store,
        installed=flags.installed,
        sanitize=sanitize,
        force_ptx=flags.force_ptx,
        cwd=cwd,
    )


def run_check(
    request: CheckRequest, *, environ: Mapping[str, str], emit: Emit = discard
) -> CheckReport:
    """Run the checks; the report's ``exit_code`` is what the CLI exits with.

    Raises UsageError/ConfigError (bad flags or config), NothingToDo (nothing selected),
    InputError (a check module or baseline that cannot be read), ToolMissing (--device cuda
    without a GPU, with the project imported from a source tree that has no built extension,
    --sanitize without compute-sanitizer, or --force-ptx with no PTX that every GPU here can
    JIT).
    """
    _refuse_nonsense(request)
    if request.device == "cuda":
        _require_gpu(environ)
    sanitizer = _find_sanitizer(environ) if request.sanitize else None
    project = find_project(request.path, installed=request.installed)
    ops = _discover(project)
    if project.installed is not None:
        from cuship.provenance.installed import check_imported

        check_imported(project.installed, sys.modules)
    the_plan = plan(ops, _settings(request, project))
    emit(
        Event(
            level="info",
            topic="check",
            message=f"checking {len(the_plan.runnable)} of {len(the_plan.groups)} groups "
            f"(device {the_plan.device}, seed {the_plan.seed}"
            + (", quick" if the_plan.quick else "")
            + ")",
        )
    )
    baseline = _baseline(request, the_plan)
    report = _execute(the_plan, request, project, environ=environ, emit=emit)
    if sanitizer is not None:
        report = _sanitize(the_plan, report, request, project, sanitizer, environ, emit)
    if baseline is not None:
        report = _gate(report, baseline, request, project)
    _keep(report, request, project, environ, emit)
    return report


def _refuse_nonsense(request: CheckRequest) -> None:
    """UsageError for options that ask what this run cannot do."""
    if request.force_ptx and request.device != "cuda":
        raise UsageError(
            f"--force-ptx runs the compiled extension's PTX on a GPU; this run is --device "
            f"{request.device}",
            hint="use --device cuda (or leave --device at auto)",
        )
    if request.fail_on_regression and request.baseline is None:
        raise UsageError(
            "--fail-on-regression compares with a baseline, and no --baseline was given",
            hint="add --baseline FILE (one written by --save-baseline), or drop --fail-on-regression",
        )
    if request.sanitize and request.device != "cuda":
        raise UsageError(
            f"--sanitize runs compute-sanitizer on a GPU; this run is --device {request.device}",
            hint="use --device cuda on a machine with a CUDA GPU",
        )


def _keep(
    report: CheckReport,
    request: CheckRequest,
    project: CheckProject,
    environ: Mapping[str, str],
    emit: Emit,
) -> None:
    """The report saved as a baseline (``--save-baseline``) and in the results store."""
    if request.save_baseline is not None:
        save_baseline(from_report(report), request.save_baseline)
        message = f"baseline written to {request.save_baseline}"
        emit(Event(level="info", topic="check", message=message))
    if request.store:
        store_path = project.store_path(environ)
        run_id = record(report, store_path, project=project.name, environ=environ)
        emit(Event(level="debug", topic="check", message=f"run {run_id} stored in {store_path}"))


def _discover(project: CheckProject) -> tuple[Op, ...]:
    """The project's ops; a check module that imports NumPy, torch, Triton or Numba where it is
    not installed is a missing tool (exit 3, the install line), not a bad input."""
    try:
        return discover(project.config.modules, project.root, project.pythonpath)
    except InputError as err:
        missing = missing_module(err, "a check module")
        if missing is not None:
            raise missing from err
        raise


def _baseline(request: CheckRequest, the_plan: Plan) -> ErrorBaseline | None:
    """The baseline asked for, if it holds this run's cases (else UsageError, exit 2)."""
    if request.baseline is None:
        return None
    baseline = load_baseline(request.baseline)
    require_comparable(baseline, request.baseline, quick=the_plan.quick, seed=the_plan.seed)
    return baseline


def _gate(
    report: CheckReport, baseline: ErrorBaseline, request: CheckRequest, project: CheckProject
) -> CheckReport:
    config = project.config
    found = regressions(report, baseline, config.regression_threshold, config.rel_regression_factor)
    return replace(report, regressions=found, gate_regressions=request.fail_on_regression)


def _settings(request: CheckRequest, project: CheckProject) -> CheckSettings:
    return CheckSettings(
        device=request.device,
        quick=request.quick,
        ops=request.ops,
        engines=request.engines,
        dtypes=request.dtypes,
        seed=project.config.seed if request.seed is None else request.seed,
        case=request.case,
        include_broken=request.include_broken,
        force_ptx=request.force_ptx,
        config=project.config,
    )


def _execute(
    the_plan: Plan,
    request: CheckRequest,
    project: CheckProject,
    *,
    environ: Mapping[str, str],
    emit: Emit,
) -> CheckReport:
    """Probe (provenance on one worker, engines once each, on as many workers as the run will
    fork from), then run the plan on those workers or forks of them."""
    interpret = any(g.engine == "triton-interpret" for g in the_plan.runnable)
    setup = _setup(request, project, environ, interpret=interpret)
    jit: tuple[str, ...] = ()
    parallel = project.config.parallel if request.parallel is None else request.parallel
    spread = lane_count(the_plan, parallel, forked=setup.fork)
    with EngineProbe(setup, project.config.timeout, spread=spread) as probe:
        if request.device == "cuda":
            _require_built(probe.provenance, the_plan)
        if request.force_ptx:
            jit = _require_jit(probe.provenance, environ, emit)
        unavailable = probe.engines(runnable_engines(the_plan))
        if engines_required(request, environ):
            require_engines(unavailable)
        report = execute(
            skip_unavailable(the_plan, unavailable),
            setup,
            target=request.target,
            parallel=parallel,
            timeout=project.config.timeout,
            emit=emit,
            handover=probe.handover(),
        )
    return replace(
        report,
        provenance=probe.provenance,
        unavailable=unavailable,
        jit=jit,
        env=code_env(environ),
    )


_FALSE = ("", "0", "false", "no", "off")


def engines_required(request: CheckRequest, environ: Mapping[str, str]) -> bool:
    """--require-engines, or by default in CI (``CI`` set, as GitHub Actions and GitLab set it)."""
    if request.require_engines is not None:
        return request.require_engines
    return environ.get("CI", "").strip().lower() not in _FALSE


def require_engines(unavailable: Sequence[Unavailable]) -> None:
    """An engine the selected ops declare cannot run: never a green run of skips (exit 3)."""
    if not unavailable:
        return
    lines = "; ".join(f"{u.engine}: {u.error}" for u in unavailable)
    fixes = "; ".join(dict.fromkeys(u.fix for u in unavailable))
    raise ToolMissing(
        f"{len(unavailable)} engine(s) the checked ops declare cannot run here ({lines})",
        hint=f"{fixes} (a run outside CI without --require-engines skips them instead)",
    )


def _require_jit(
    provenance: Provenance | None, environ: Mapping[str, str], emit: Emit
) -> tuple[str, ...]:
    """--force-ptx: every GPU here must be able to JIT the PTX of every shared object with
    device code in the project's packages (else ToolMissing, exit 3); what each will JIT."""
    from cuship.check.run.forceptx import decide, package_objects, require_jit
    from cuship.machine import fingerprint

    objects, looked_in = package_objects(provenance)
    gpus = [(g.name, g.cc) for g in fingerprint(environ).gpus]
    gate = decide(objects, gpus, looked_in=looked_in)
    require_jit(gate)
    for target in gate.targets:
        level: Level = "warning" if target.cc is None else "info"
        emit(Event(level=level, topic="check", message=f"force-ptx: {target.line()}"))
    return gate.lines()


def _setup(
    request: CheckRequest,
    project: CheckProject,
    environ: Mapping[str, str],
    *,
    interpret: bool = False,
) -> WorkerSetup:
    return setup_for(
        modules=project.config.modules,
        root=project.root,
        pythonpath=project.pythonpath,
        device=request.device,
        environ=environ,
        packages=project.packages,
        force_ptx=request.force_ptx,
        interpret=interpret,
        cwd=request.cwd,
    )


def _find_sanitizer(environ: Mapping[str, str]) -> str:
    from cuship.check.sanitize.tools import find_sanitizer

    return find_sanitizer(environ)


def _sanitize(
    the_plan: Plan,
    report: CheckReport,
    request: CheckRequest,
    project: CheckProject,
    sanitizer: str,
    environ: Mapping[str, str],
    emit: Emit,
) -> CheckReport:
    """The GPU engines' cases again under each tool (see :mod:`cuship.check.sanitize.run`)."""
    from cuship.check.sanitize.run import TIMEOUT_FACTOR, SanitizeSettings, default_jobs, sanitize

    jobs = default_jobs(len(request.sanitize), request.parallel or None)
    settings = SanitizeSettings(
        tools=request.sanitize,
        sanitizer=sanitizer,
        timeout=project.config.timeout * TIMEOUT_FACTOR,
        jobs=jobs,
    )
    groups = skip_unavailable(the_plan, report.unavailable).runnable
    runs = sanitize(groups, report, _setup(request, project, environ), settings, emit=emit)
    return replace(report, sanitize=runs, finished=time.time())


def _require_built(provenance: Provenance | None, the_plan: Plan) -> None:
    """--device cuda with ``cuda`` cases, but the project came from a source tree whose compiled
    extension does not load: every such case would fail the same way, so say it once (exit 3)."""
    if provenance is None or not any(g.engine == "cuda" for g in the_plan.runnable):
        return
    require_built(provenance, "[check] pythonpath")


def _require_gpu(environ: Mapping[str, str]) -> None:
    """--device cuda on a machine without a GPU is an error, never a run of skips."""
    from cuship.machine import fingerprint

    if not fingerprint(environ).gpus:
        raise ToolMissing(
            "--device cuda, but this machine has no CUDA GPU (no NVML, nvidia-smi or driver)",
            hint="use --device cpu for the interpreters and simulators, or run on a GPU runner",
        )


def record(report: CheckReport, path: Path, *, project: str, environ: Mapping[str, str]) -> int:
    """Store a check run (one result row per op/engine/dtype) in the results store at ``path``."""
    from cuship.machine import fingerprint
    from cuship.store import ResultRow, RunRecord, Store
    from cuship.version import __version__

    run = RunRecord(
        kind="check",
        started=report.started,
        finished=report.finished,
        fingerprint=fingerprint(environ).to_json(),
        cuship_version=__version__,
        project=project,
        verdict=report.verdict,
        meta={
            "target": report.target,
            "seed": report.seed,
            "quick": report.quick,
            "device": report.device,
            "force_ptx": report.force_ptx,
            "jit": list(report.jit),
            "env": dict(report.env),
            "regressions": [r.to_json() for r in report.regressions],
            "provenance": None if report.provenance is None else report.provenance.to_json(),
            "unavailable": [u.to_json() for u in report.unavailable],
            "sanitize": [s.to_json() for s in report.sanitize],
        },
    )
    rows = [
        ResultRow(
            key=g.key,
            status=g.status,
            payload=g.to_json(),
            numbers={
                name: float(value)
                for name, value in (
                    ("max_abs", g.max_abs),
                    ("max_rel", g.max_rel),
                    ("mismatches", g.mismatches),
                    ("cases", len(g.cases)),
                    ("wall_s", g.wall_s),
                )
                if value is not None
            },
        )
        for g in report.groups
    ]
    with Store.open(path) as store:
        return store.record(run, rows)
