"""One ``cuship bench`` run from request to report: project, cases, timer, baseline, gates, store."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from cuship.bench.burnin import BurnIn
from cuship.bench.gate import apply_floor, check_machine, load_baseline
from cuship.bench.ncu.profile import NcuSession
from cuship.bench.peak import PeakShare, case_dtype, peak_share
from cuship.bench.project import BenchProject, find_project, point_floors, point_threshold
from cuship.bench.registry import Case, Point, code_hash, discover, points
from cuship.bench.request import DEFAULT_OUTPUT, BenchRequest, TimerKind, bench_request
from cuship.bench.results import BenchReport, PointResult
from cuship.bench.runner import Protocol, point_progress, run_interleaved, run_points
from cuship.bench.stats import compare, compare_exact
from cuship.bench.timers.measure import StopRule, Timer, WallTimer
from cuship.errors import NothingToDo, ToolMissing, UsageError
from cuship.events import Emit, Event, discard
from cuship.provenance import Provenance, collect, require_built

__all__ = [
    "BenchRequest",
    "TimerKind",
    "bench_request",
    "record",
    "resolve_timer",
    "run_bench",
    "run_burn_in",
    "select",
]


def _discover(project: BenchProject) -> tuple[Case, ...]:
    """The project's cases; with ``--installed``, proven to import the installed package."""
    cases = discover(project.config.modules, project.root, project.pythonpath)
    if project.installed is not None:
        from cuship.provenance.installed import check_imported

        check_imported(project.installed, sys.modules)
    return cases


def select(cases_points: Sequence[Point], wanted: Sequence[str]) -> tuple[Point, ...]:
    """The points of the cases named in ``wanted`` (case names or full keys); all without."""
    if not wanted:
        return tuple(cases_points)
    known = {p.case.name for p in cases_points} | {p.key for p in cases_points}
    unknown = [w for w in wanted if w not in known]
    if unknown:
        names = ", ".join(sorted({p.case.name for p in cases_points}))
        raise UsageError(f"no benchmark case {unknown[0]!r}", hint=f"known cases: {names}")
    return tuple(p for p in cases_points if p.case.name in wanted or p.key in wanted)


def resolve_timer(kind: TimerKind, environ: Mapping[str, str]) -> str:
    """``auto`` → ``cuda`` when torch sees a CUDA device, else ``wall``; ``cuda`` without one is
    ToolMissing (exit 3)."""
    if kind in ("wall", "instructions"):
        return kind
    from cuship.machine import fingerprint

    has_gpu = bool(fingerprint(environ).gpus) and _torch_cuda() is not None
    if kind == "cuda" and not has_gpu:
        raise ToolMissing(
            "--timer cuda, but torch sees no CUDA device here",
            hint="run on a GPU machine with a CUDA build of torch, or use --timer wall",
        )
    return "cuda" if has_gpu else "wall"


def _torch_cuda() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def _timer_factory(kind: str, project: BenchProject) -> Callable[[], Timer]:
    if kind == "cuda":
        from cuship.bench.timers.cuda import CudaTimer

        shared = CudaTimer(_torch_cuda())
        return lambda: shared
    return lambda: WallTimer(sample_time=project.config.sample_time)


def _rule(project: BenchProject, request: BenchRequest) -> StopRule:
    c = project.config
    return StopRule(
        noise=c.noise if request.noise is None else request.noise,
        min_samples=c.min_samples,
        max_samples=c.max_samples,
        min_time=c.min_time if request.min_time is None else request.min_time,
        timeout=c.timeout if request.timeout is None else request.timeout,
        drop_throttled=(
            c.drop_throttled if request.drop_throttled is None else request.drop_throttled
        ),
    )


def _measure(
    request: BenchRequest,
    project: BenchProject,
    selected: tuple[Point, ...],
    kind: str,
    emit: Emit,
) -> tuple[tuple[PointResult, ...], dict[str, tuple[float, ...]] | None]:
    rule = _rule(project, request)
    if kind == "instructions":
        return _instructions(project, selected, request, emit), None
    timer_for = _timer_factory(kind, project)
    if request.compare_with is not None:
        other = find_project(request.compare_with)
        theirs = points(discover(other.config.modules, other.root, other.pythonpath))
        partners = {p.key: p for p in theirs}
        return run_interleaved(selected, partners, timer_for, rule, emit)
    seeds = request.seeds if request.seeds is not None else project.config.seeds
    repeats = request.repeats if request.repeats is not None else project.config.repeats
    protocol = Protocol(rule=rule, seeds=seeds, repeats=repeats)
    return run_points(selected, timer_for, protocol, emit), None


def _instructions(
    project: BenchProject, selected: Sequence[Point], request: BenchRequest, emit: Emit
) -> tuple[PointResult, ...]:
    import os

    from cuship.bench.timers.callgrind import find_valgrind, instructions_per_call

    find_valgrind(os.environ)
    out = []
    for index, point in enumerate(selected, 1):
        try:
            m = instructions_per_call(
                point, root=project.root, pythonpath=project.pythonpath, environ=os.environ
            )
            result = PointResult(
                key=point.key,
                case=point.case.name,
                params=point.params,
                status="ok",
                measurement=m,
                work=point.case.work(point.params),
            )
        except RuntimeError as err:
            result = PointResult(
                key=point.key,
                case=point.case.name,
                params=point.params,
                status="errored",
                measurement=None,
                error=str(err),
            )
        emit(point_progress(index, len(selected), result))
        out.append(result)
    return tuple(out)


def _peak(result: PointResult, case: Case | None, gpu_peak: Any) -> PeakShare | None:
    if gpu_peak is None or case is None or result.cold is None:
        return None
    dtype, origin = case_dtype(case.peak_dtype, result.params)
    return peak_share(gpu_peak, median=result.cold, work=result.work, dtype=dtype, origin=origin)


def _gpu_peak(kind: str, fingerprint: Mapping[str, Any]) -> Any:
    """The datasheet peaks of this machine's GPU variant, for CUDA-timed runs only."""
    gpu = fingerprint.get("gpu")
    if kind != "cuda" or not gpu:
        return None
    from cuship.compat import load

    return load().peak(str(gpu))


def _gate(
    results: tuple[PointResult, ...],
    project: BenchProject,
    fingerprint: Mapping[str, Any],
    baseline: Mapping[str, tuple[float, ...]] | None,
    cases: Mapping[str, Case],
    gpu_peak: Any,
) -> tuple[PointResult, ...]:
    out = []
    for r in results:
        m = r.measurement
        if m is None:
            out.append(r)
            continue
        r = replace(r, peak=_peak(r, cases.get(r.key), gpu_peak))
        theirs = (baseline or {}).get(r.key)
        threshold = point_threshold(project.config, r.case, r.key)
        comparison = None
        if theirs and m.unit == "instructions":
            comparison = compare_exact(r.kept[0], theirs[0], threshold)
        elif theirs:
            comparison = compare(r.kept, theirs, threshold)
        floors = point_floors(project.config, r.case, r.key)
        floor = apply_floor(floors, fingerprint.get("gpu"), r.numbers()) if floors else None
        out.append(replace(r, comparison=comparison, floor=floor))
    return tuple(out)


def run_bench(
    request: BenchRequest, *, environ: Mapping[str, str], emit: Emit = discard
) -> BenchReport:
    """Run the benchmarks; the report's ``exit_code`` is what the CLI exits with.

    Raises UsageError/ConfigError (bad flags, config, a baseline from another machine),
    InputError (a module or baseline that cannot be read), ToolMissing (no GPU for --timer
    cuda or --profile ncu, no valgrind for --timer instructions, no ncu for --profile ncu),
    NothingToDo (no case selected).
    """
    from cuship.bench.env import bench_fingerprint

    project = find_project(request.path, installed=request.installed)
    ncu = _ncu_preflight(request, environ)
    cases, selected = _selected(project, request.cases)
    kind = resolve_timer(request.timer, environ)
    if ncu is not None and kind != "cuda":
        raise ToolMissing(
            "--profile ncu needs the CUDA timer, but torch sees no CUDA device here",
            hint="install a CUDA build of torch on this GPU machine, or run without --profile ncu",
        )
    provenance = _provenance(project, kind)
    fp = bench_fingerprint(environ, timer=kind, project_package=project.package)
    drop = _rule(project, request).drop_throttled
    baseline_samples, source = _baseline(request, project, fp, environ, drop)
    emit(Event(level="info", topic="bench", message=f"{len(selected)} points, timer {kind}"))
    started = time.time()
    results, partners = _measure(request, project, selected, kind, emit)
    finished = time.time()
    if partners is not None:
        baseline_samples, source = partners, f"interleaved with {request.compare_with}"
    by_key = {p.key: p.case for p in selected}
    results = _gate(results, project, fp, baseline_samples, by_key, _gpu_peak(kind, fp))
    session = None
    if ncu is not None:  # every point is timed by now: profiling never overlaps a sample
        results, session = _profile(request, project, selected, results, ncu, environ, emit)
    seeds, repeats = _design(request, project, kind)
    report = BenchReport(
        project=project.name,
        path=str(request.path),
        started=started,
        finished=finished,
        fingerprint=fp,
        seeds=seeds,
        repeats=repeats,
        label=request.label,
        code_hash={c.name: code_hash(c) for c in cases if any(p.case is c for p in selected)},
        results=results,
        baseline=source,
        fail_on_regression=request.fail_on_regression,
        assert_floors=request.assert_floors,
        provenance=provenance,
        profile=session,
    )
    if request.store:
        store_path = project.store_path(environ)
        report = replace(report, run_id=record(report, store_path))
        emit(Event(level="debug", topic="bench", message=f"run {report.run_id} in {store_path}"))
    return report


def _selected(
    project: BenchProject, keys: Sequence[str]
) -> tuple[tuple[Case, ...], tuple[Point, ...]]:
    """The project's cases and the points ``keys`` select (all without keys); none is
    :class:`NothingToDo`."""
    cases = _discover(project)
    selected = select(points(cases), keys)
    if not selected:
        raise NothingToDo(
            f"no benchmark cases in {project.config.modules!r}",
            hint="declare cases with @cuship.bench.case in the modules named in [bench] modules",
        )
    return cases, selected


def _design(request: BenchRequest, project: BenchProject, kind: str) -> tuple[int, int]:
    """The run's seeds × repeats as the report states them: a fixed design (both given, by flag
    or config, and a timer with run-to-run spread) or one seed and adaptive repeats (0)."""
    seeds = request.seeds or project.config.seeds
    repeats = request.repeats or project.config.repeats
    fixed = seeds is not None and repeats is not None and kind != "instructions"
    return (seeds if fixed and seeds else 1), (repeats if fixed and repeats else 0)


def _ncu_preflight(request: BenchRequest, environ: Mapping[str, str]) -> str | None:
    """The ncu that ``--profile ncu`` uses, found before anything is imported or timed."""
    if request.profile is None:
        return None
    from cuship.bench.ncu.run import preflight

    return preflight(request.timer, environ)


def _profile(
    request: BenchRequest,
    project: BenchProject,
    selected: Sequence[Point],
    results: tuple[PointResult, ...],
    ncu: str,
    environ: Mapping[str, str],
    emit: Emit,
) -> tuple[tuple[PointResult, ...], NcuSession]:
    from cuship.bench.ncu.run import NcuOptions, profile_run

    reports = request.ncu_reports
    if reports is None and request.ncu_set == "full":
        reports = DEFAULT_OUTPUT / "ncu"  # as bench_request decides for the CLI's default -o
    options = NcuOptions(ncu=ncu, metric_set=request.ncu_set, reports=reports)
    return profile_run(
        results,
        selected,
        options,
        root=project.root,
        pythonpath=project.pythonpath,
        environ=environ,
        emit=emit,
    )


def _provenance(project: BenchProject, kind: str) -> Provenance | None:
    """Where the project's packages came from (the cases imported them in this process); with
    the CUDA timer, a source tree without its compiled extension is refused (exit 3): the run
    would time the CPU fallbacks under CUDA events."""
    if not project.packages:
        return None
    provenance = collect(project.packages)
    if kind == "cuda":
        require_built(provenance, "[bench] pythonpath")
    return provenance


def _baseline(
    request: BenchRequest,
    project: BenchProject,
    fp: Mapping[str, Any],
    environ: Mapping[str, str],
    drop_throttled: bool,
) -> tuple[dict[str, tuple[float, ...]] | None, str | None]:
    if request.baseline is None:
        return None, None
    base = load_baseline(
        request.baseline,
        store_path=project.store_path(environ),
        project=project.name,
        machine_id=str(fp["machine_id"]),
    )
    check_machine(base, str(fp["machine_id"]), allow_cross_machine=request.allow_cross_machine)
    return base.kept(drop_throttled=drop_throttled), base.source


def record(report: BenchReport, path: Path) -> int:
    """Store a bench run (one row per case × parameter point) in the results store at ``path``."""
    from cuship.store import ResultRow, RunRecord, Store
    from cuship.version import __version__

    run = RunRecord(
        kind="bench",
        started=report.started,
        finished=report.finished,
        fingerprint=dict(report.fingerprint),
        cuship_version=__version__,
        project=report.project,
        verdict=report.verdict,
        meta=report.meta(),
    )
    rows = [
        ResultRow(key=r.key, status=r.status, payload=r.payload(), numbers=r.numbers())
        for r in report.results
    ]
    with Store.open(path) as store:
        return store.record(run, rows)


def run_burn_in(request: BenchRequest, duration: float, *, environ: Mapping[str, str]) -> BurnIn:
    """Burn-in of the one point ``request.cases`` selects (a case with one point, or a key)."""
    from cuship.bench.burnin import burn_in

    project = find_project(request.path, installed=request.installed)
    selected = select(points(_discover(project)), request.cases)
    if len(selected) != 1:
        keys = ", ".join(p.key for p in selected[:8])
        raise UsageError(
            f"--burn-in runs one point, and {len(selected)} are selected ({keys})",
            hint="name one with --case, e.g. --case 'saxpy[n=1024]'",
        )
    torch = _torch_cuda() if resolve_timer(request.timer, environ) == "cuda" else None
    return burn_in(
        selected[0], duration, tolerance=project.config.burn_in_tolerance * 2**20, torch=torch
    )
