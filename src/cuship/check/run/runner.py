"""Plan a check run (pure: ops x engines x dtypes x cases) and execute it in worker processes.

Each worker is a fresh Python started with the device's interpreter flags; a case that crashes
the worker, hangs past the per-case timeout or fails to import is a failed case carrying its
message, the worker is replaced and the run goes on.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from cuship.check.case.compare import tolerance_for
from cuship.check.case.engines import ENGINES, Device, engines_for, skip_reason
from cuship.check.declare.inputs import CaseSpec, plan_cases
from cuship.check.declare.registry import Op
from cuship.check.report.results import CaseResult, CheckReport, GroupResult
from cuship.check.run.availability import Unavailable
from cuship.check.run.forks import ForkRefused, Zygote
from cuship.check.run.lanes import Lane, Pending, PlannedGroup, useful_lanes
from cuship.check.run.workers import Worker, WorkerDied, WorkerSetup
from cuship.config import CheckSection
from cuship.errors import NothingToDo, UsageError
from cuship.events import Emit, Event, discard, progress

__all__ = [
    "CheckSettings",
    "Plan",
    "PlannedGroup",
    "execute",
    "lane_count",
    "plan",
    "runnable_engines",
    "setup_for",
    "skip_unavailable",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckSettings:
    """What the command line asked for, on top of the ``[check]`` config."""

    device: Device = "cpu"
    quick: bool = False
    ops: tuple[str, ...] = ()
    engines: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()
    seed: int = 0
    case: int | None = None
    include_broken: bool = False
    force_ptx: bool = False  # CUDA_FORCE_PTX_JIT=1: only the ``cuda`` engine runs
    config: CheckSection = field(default_factory=CheckSection)


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    groups: tuple[PlannedGroup, ...]
    seed: int
    quick: bool
    device: Device
    force_ptx: bool = False

    @property
    def runnable(self) -> tuple[PlannedGroup, ...]:
        return tuple(g for g in self.groups if g.skip_reason is None and g.cases)


def _select_ops(ops: Sequence[Op], settings: CheckSettings) -> list[Op]:
    known = {op.name: op for op in ops}
    for name in settings.ops:
        if name not in known:
            raise UsageError(
                f"no op named {name!r}",
                hint=f"known ops: {', '.join(sorted(known)) or 'none (no check modules?)'}",
            )
    if settings.ops:
        return [known[name] for name in dict.fromkeys(settings.ops)]
    return [op for op in ops if op.default or settings.include_broken]


def _dtypes(op: Op, settings: CheckSettings) -> tuple[str, ...]:
    wanted = settings.dtypes or (settings.config.quick.dtypes if settings.quick else ())
    override = settings.config.ops.get(op.name)
    if override is not None and override.dtypes:
        wanted = tuple(d for d in (wanted or override.dtypes) if d in override.dtypes)
    return tuple(d for d in op.dtypes if not wanted or d in wanted)


def _engines(settings: CheckSettings) -> tuple[str, ...]:
    for name in settings.engines:
        if name not in ENGINES:
            raise UsageError(f"no engine named {name!r}", hint=f"engines: {', '.join(ENGINES)}")
    available = engines_for(settings.device)
    for name in settings.engines:
        if ENGINES[name].device == "cpu" and name not in available:
            raise UsageError(
                f"engine {name!r} runs only with --device cpu",
                hint="on a GPU use --engine triton or --engine numba",
            )
    if settings.force_ptx and settings.engines and "cuda" not in settings.engines:
        raise UsageError(
            f"--force-ptx runs the compiled extension (engine cuda), not "
            f"{', '.join(settings.engines)}",
            hint="drop --engine, or add --engine cuda",
        )
    return tuple(dict.fromkeys(settings.engines)) or available


def _cases(op: Op, dtype: str, settings: CheckSettings) -> tuple[CaseSpec, ...]:
    cfg = settings.config
    override = cfg.ops.get(op.name)
    cases = plan_cases(
        op,
        dtype,
        seed=settings.seed,
        extended=not settings.quick,
        all_distributions=not settings.quick,
        fuzz=cfg.quick.fuzz if settings.quick else cfg.fuzz,
        extra_shapes=override.shapes if override is not None else (),
    )
    if settings.case is None:
        return cases
    return tuple(c for c in cases if c.index == settings.case)


def _group(op: Op, engine: str, dtype: str, settings: CheckSettings) -> PlannedGroup | None:
    impl = op.impl(ENGINES[engine].kind)
    if impl is None or dtype not in op.impl_dtypes(impl):
        return None
    override = settings.config.ops.get(op.name)
    tol = tolerance_for(
        dtype,
        op.tolerances,
        rtol=override.rtol if override else None,
        atol=override.atol if override else None,
    )
    return PlannedGroup(
        op=op.name,
        engine=engine,
        dtype=dtype,
        rtol=tol.rtol,
        atol=tol.atol,
        cases=_cases(op, dtype, settings),
        skip_reason=_forced_skip(engine, settings)
        or skip_reason(engine, impl, dtype, settings.device),
    )


def _forced_skip(engine: str, settings: CheckSettings) -> str | None:
    """Why ``engine`` does not run in a forced-PTX run (None: it runs, or the run is plain)."""
    from cuship.check.run.forceptx import FORCED_ENGINES, FORCED_SKIPS

    if not settings.force_ptx or engine in FORCED_ENGINES:
        return None
    return f"--force-ptx: {FORCED_SKIPS.get(engine, 'only the cuda engine runs forced')}"


def plan(ops: Sequence[Op], settings: CheckSettings) -> Plan:
    """Every (op, engine, dtype) group with its cases; raises NothingToDo on an empty plan."""
    if not ops:
        raise NothingToDo(
            "no ops found: the check modules declare no cuship.check.Op",
            hint="list modules in [check] modules = [...] in cuship.toml",
        )
    engines = _engines(settings)
    groups = [
        group
        for op in _select_ops(ops, settings)
        for engine in engines
        for dtype in _dtypes(op, settings)
        if (group := _group(op, engine, dtype, settings)) is not None
    ]
    if not groups:
        raise NothingToDo(
            "nothing selected: no op has an entry point for the engines and dtypes asked for",
            hint="drop some --op/--engine/--dtype filters",
        )
    if settings.force_ptx and not any(g.engine == "cuda" and g.skip_reason is None for g in groups):
        raise NothingToDo(
            "--force-ptx: no selected op has a cuda entry point (Impl(kind='cuda')) to run from "
            "PTX; the other engines do not run forced",
            hint="declare the compiled extension's entry points as kind='cuda', or drop --force-ptx",
        )
    return Plan(
        groups=tuple(groups),
        seed=settings.seed,
        quick=settings.quick,
        device=settings.device,
        force_ptx=settings.force_ptx,
    )


def runnable_engines(the_plan: Plan) -> tuple[str, ...]:
    """The engines that have cases to run, in plan order: the ones to probe."""
    return tuple(dict.fromkeys(g.engine for g in the_plan.runnable))


def skip_unavailable(the_plan: Plan, unavailable: Sequence[Unavailable]) -> Plan:
    """The plan with each runnable group of an unavailable engine skipped for that reason."""
    reasons = {u.engine: u.reason for u in unavailable}
    groups = tuple(
        replace(g, skip_reason=reasons[g.engine])
        if g.skip_reason is None and g.engine in reasons
        else g
        for g in the_plan.groups
    )
    return replace(the_plan, groups=groups)


def _result(
    group: PlannedGroup, cases: tuple[CaseResult, ...] = (), skip_reason: str | None = None
) -> GroupResult:
    """The result of ``group``: its op, engine, dtype and tolerances, with its cases or why it
    was skipped."""
    return GroupResult(
        op=group.op,
        engine=group.engine,
        dtype=group.dtype,
        rtol=group.rtol,
        atol=group.atol,
        cases=cases,
        skip_reason=skip_reason,
    )


def _skipped(group: PlannedGroup) -> GroupResult:
    return _result(group, skip_reason=group.skip_reason or "no cases")


def execute(
    the_plan: Plan,
    setup: WorkerSetup,
    *,
    target: str,
    parallel: int = 1,
    timeout: float = 300.0,
    emit: Emit = discard,
    handover: Sequence[tuple[Worker, frozenset[str]]] = (),
) -> CheckReport:
    """Run the plan's groups on up to ``parallel`` workers (0: one per core; only as many as
    the run's estimated work pays for, see :func:`useful_lanes`) and collect the report.

    ``handover``: started workers (the probe's), each with the engines it has imported; the
    first lanes run on them, or, on a CPU run with several lanes, every lane runs on forks of
    them (see :mod:`cuship.check.run.forks`).
    """
    started = time.time()
    forked = setup.fork and bool(handover)
    workers = _lane_count(the_plan, parallel, emit, forked=forked)
    pending = Pending(the_plan.runnable, workers)
    done = _Done(the_plan.runnable, len(pending), emit)
    zygotes, lanes = _lanes(setup, timeout, workers, handover, forked=forked)
    if zygotes:
        kept = "; ".join(", ".join(sorted(z.ready)) or "none" for z in zygotes)
        message = f"{workers} workers forked from {len(zygotes)} with the engines imported ({kept})"
        emit(Event(level="debug", topic="check", message=message))
    try:
        _run_lanes(lanes, pending, done)
    finally:
        for zygote in zygotes:
            zygote.close()
    groups = tuple(
        _collect(g, done.results.get((g.op, g.engine, g.dtype))) for g in the_plan.groups
    )
    return CheckReport(
        target=target,
        device=the_plan.device,
        seed=the_plan.seed,
        quick=the_plan.quick,
        started=started,
        finished=time.time(),
        groups=groups,
        force_ptx=the_plan.force_ptx,
    )


def _run_lanes(lanes: Sequence[Lane], pending: Pending, done: _Done) -> None:
    """Each lane on a thread of its own, taking chunks until none is left; back when the work
    is done (a lane still starting its worker then is not needed, and is cancelled)."""

    def lane_loop(lane: Lane) -> None:
        try:
            engine = pending.peek(lane.ready)
            if engine is not None:
                lane.warm(engine)
            while (chunk := pending.take(lane.ready)) is not None:
                done.add(chunk, lane.run(chunk))
        finally:
            lane.close()

    threads = [threading.Thread(target=lane_loop, args=(lane,), daemon=True) for lane in lanes]
    for thread in threads:
        thread.start()
    while not done.finished.wait(0.1) and any(t.is_alive() for t in threads):
        pass
    for lane in lanes:
        lane.cancel()
    for thread in threads:
        thread.join()


class _Done:
    """The results of the chunks run so far (thread-safe); a group's progress event is sent
    once all its cases are in, and ``finished`` is set with the last chunk."""

    def __init__(self, groups: Sequence[PlannedGroup], chunks: int, emit: Emit) -> None:
        self.results: dict[tuple[str, str, str], list[CaseResult]] = {}
        self.finished = threading.Event()
        self._sizes = {(g.op, g.engine, g.dtype): len(g.cases) for g in groups}
        self._left = chunks
        self._groups = 0  # whose every case is in
        self._total = sum(1 for size in self._sizes.values() if size)
        self._emit = emit
        self._lock = threading.Lock()
        if not chunks:
            self.finished.set()

    def add(self, chunk: PlannedGroup, results: tuple[CaseResult, ...]) -> None:
        key = (chunk.op, chunk.engine, chunk.dtype)
        with self._lock:
            group = self.results.setdefault(key, [])
            group.extend(results)
            if len(group) == self._sizes[key]:
                self._groups += 1
                results = tuple(sorted(group, key=lambda r: r.case.index))
                self._emit(_progress(chunk, results, self._groups, self._total))
            self._left -= 1
            if not self._left:
                self.finished.set()


def _lanes(
    setup: WorkerSetup,
    timeout: float,
    workers: int,
    handover: Sequence[tuple[Worker, frozenset[str]]],
    *,
    forked: bool,
) -> tuple[list[Zygote], list[Lane]]:
    """The lanes, the first ones on the probe's workers; or, with several lanes and forkable
    probe workers, those as zygotes and every lane on a fork of one of them."""
    given = list(handover)
    if workers > 1 and forked and given:
        zygotes = [Zygote(worker, ready, max(timeout, 60.0)) for worker, ready in given]
        try:
            first = zygotes[0].fork()
        except ForkRefused:  # it runs threads: the lanes run on the probe's workers and fresh ones
            pass
        except WorkerDied:  # it died
            zygotes[0].close()
            given = given[1:]
        else:
            lanes = [Lane(setup, timeout, worker=first, ready=given[0][1], zygotes=zygotes)]
            lanes += [Lane(setup, timeout, zygotes=zygotes) for _ in range(workers - 1)]
            return zygotes, lanes
    lanes = [Lane(setup, timeout, worker=worker, ready=ready) for worker, ready in given[:workers]]
    for worker, _ in given[workers:]:
        worker.stop()
    return [], lanes + [Lane(setup, timeout) for _ in range(workers - len(lanes))]


def lane_count(the_plan: Plan, parallel: int, *, forked: bool = False) -> int:
    """How many workers run the plan: ``parallel`` (0: one per core) at most, and only as many
    as its estimated work pays for (see :func:`useful_lanes`)."""
    return useful_lanes(the_plan.runnable, _asked(parallel), forked=forked)


def _asked(parallel: int) -> int:
    if parallel > 0:
        return parallel
    try:  # the cores this process may run on (a container's or taskset's share)
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _lane_count(the_plan: Plan, parallel: int, emit: Emit, *, forked: bool = False) -> int:
    asked = _asked(parallel)
    workers = lane_count(the_plan, parallel, forked=forked)
    if workers < asked:
        emit(
            Event(
                level="info" if parallel > 0 else "debug",
                topic="check",
                message=f"--parallel {asked}: {workers} worker(s); the run's estimated work "
                "does not pay for starting more",
            )
        )
    return workers


def _collect(group: PlannedGroup, results: list[CaseResult] | None) -> GroupResult:
    if results is None:
        return _skipped(group)
    return _result(group, cases=tuple(sorted(results, key=lambda r: r.case.index)))


def _progress(chunk: PlannedGroup, results: tuple[CaseResult, ...], done: int, total: int) -> Event:
    bad = sum(r.status in ("failed", "error") for r in results)
    key = chunk.key
    indexes = f"cases {results[0].case.index}-{results[-1].case.index}" if results else "no cases"
    seconds = sum(r.wall_s for r in results)
    data = {"key": key, "bad": bad, "cases": len(results)}
    return progress(
        "check", done, total, key, f"{indexes}, {bad or 'none'} bad", seconds, data=data
    )


def setup_for(
    *,
    modules: Sequence[str],
    root: Path,
    pythonpath: Sequence[Path],
    device: Device,
    environ: Mapping[str, str],
    packages: Sequence[str] = (),
    force_ptx: bool = False,
    interpret: bool = False,
    cwd: Path | None = None,
) -> WorkerSetup:
    """How to start workers for a project (see :class:`cuship.check.run.workers.WorkerSetup`)."""
    from cuship.check.case.engines import worker_env

    return WorkerSetup(
        modules=tuple(modules),
        root=root,
        pythonpath=tuple(pythonpath),
        env=worker_env(device, environ, force_ptx=force_ptx),
        packages=tuple(packages),
        fork=device == "cpu" and not force_ptx,
        interpret=interpret,
        cwd=cwd,
    )
