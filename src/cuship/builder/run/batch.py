"""Build many jobs: run each runnable plan, keep going past failures, report every outcome.

Up to ``workers`` jobs build at once, on a thread pool (a job is mostly subprocesses: pip, CMake,
nvcc, auditwheel, the smoke venv). Whatever finishes first, the outcomes come back in plan order.
Each job's compile parallelism is its share of the host (:func:`plan_shared`); what jobs share
is taken in turns (:mod:`cuship.builder.run.shared`); jobs whose wheels may end with one name (the
torch axis collapsing onto one wheel) follow each other (:func:`chains`). With more than one
worker a job's events are held and told together when it ends (its ``group-start`` …
``group-end`` stay whole in a CI log); only its progress (``data["phase"]`` ``job-start``,
``job-step``, ``job-end``) is told as it happens."""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cuship.builder.collapse import Collapser
from cuship.builder.model import BuildPlan, Host
from cuship.builder.run.commands import CHILDREN
from cuship.builder.run.execute import JobResult, run_plan
from cuship.builder.run.shared import Locks
from cuship.builder.run.smoke import Smoke
from cuship.builder.toolkits import cuda_ways_out
from cuship.builder.uptodate import plan_tree_state, remember, reused
from cuship.errors import CushipError, NothingToDo
from cuship.events import Emit, Event, discard, progress
from cuship.matrix import BuildJob

__all__ = [
    "Outcome",
    "build_all",
    "chains",
    "outcome_of",
    "plan_shared",
    "require_buildable",
]

Status = Literal["built", "needs-runner", "failed", "collapsed"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    job_id: str
    status: Status
    detail: str
    result: JobResult | None = None
    job: BuildJob | None = None  # the job as built (without torch once the axis collapsed)

    def to_json(self) -> dict[str, object]:
        """The job, its status and why; with what it built (:meth:`JobResult.to_json`)."""
        doc: dict[str, object] = {"job": self.job_id, "status": self.status, "detail": self.detail}
        if self.result is not None:
            doc.update(self.result.to_json())
        return doc


def require_buildable(plans: Sequence[BuildPlan], what: str) -> None:
    """Raise NothingToDo (exit 4), with every reason, when no plan can run on this host."""
    if any(p.runnable for p in plans):
        return
    reasons = sorted({p.reason or "" for p in plans})
    want_cuda = any("CUDA" in r or "nvcc" in r for r in reasons)
    raise NothingToDo(
        f"nothing of {what} can be built on this host:\n  " + "\n  ".join(reasons),
        hint=cuda_ways_out()
        if want_cuda
        else "build the other jobs on matching runners (cuship matrix --format github), "
        "or use --mode container",
    )


def outcome_of(job_id: str, build: Callable[[], JobResult], emit: Emit = discard) -> Outcome:
    """Run ``build``: built, or failed with its error or its verification problems."""
    try:
        result = build()
    except CushipError as err:
        emit(Event(level="error", topic="build", message=f"{job_id}: {err}"))
        return Outcome(job_id=job_id, status="failed", detail=str(err))
    problems = "; ".join(result.verify_problems)
    status: Status = "failed" if problems else "built"
    return Outcome(
        job_id=job_id, status=status, detail=problems or result.wheel.name, result=result
    )


def chains(plans: Sequence[BuildPlan], collapse: Collapser | None = None) -> list[list[int]]:
    """The plans (by index) as runs whose jobs are built one after another, in plan order: the
    jobs whose wheels may end with one name (the same project, version, Python, platform and
    label, as the torch axis collapses or as arch lists of one label do) share a run; the
    first of them may serve the others, and none may overwrite another's wheel as it is made."""
    runs: dict[tuple[str, ...], list[int]] = {}
    for i, plan in enumerate(plans):
        job = collapse.may_become(plan) if collapse else plan.job
        key = (job.project, job.version, job.python_tag, job.platform, job.label)
        runs.setdefault(key, []).append(i)
    return list(runs.values())


def plan_shared(
    plan: Callable[[Host], list[BuildPlan]],
    host: Host,
    parallel: int,
    collapse: Collapser | None = None,
) -> tuple[list[BuildPlan], int]:
    """The plans for building up to ``parallel`` jobs at once, and how many workers build them.

    ``plan`` plans every job for a host. When more than one job (more than one run of
    :func:`chains`) can build here, each is planned again with the host shared by the workers:
    its ``MAX_JOBS`` is its part of the cores and memory (see :func:`~.model.share`).
    """
    plans = plan(host)
    workers = min(parallel, len(chains([p for p in plans if p.runnable], collapse)))
    if workers <= 1:
        return plans, 1
    return plan(dataclasses.replace(host, workers=workers)), workers


def build_all(
    plans: Sequence[BuildPlan],
    *,
    environ: Mapping[str, str] | None = None,
    emit: Emit = discard,
    collapse: Collapser | None = None,
    workers: int = 1,
    rebuild: bool = False,
) -> tuple[Outcome, ...]:
    """Build every runnable plan, up to ``workers`` at once; list the others as needing another
    runner. The outcomes are in plan order (the collapser's, when given), and a failed job stops
    no other; an interrupt (or a bug) ends the running jobs' commands, starts no more and is
    raised again once every worker has stopped.

    A job whose wheel an earlier run built from the same inputs is not built again unless
    ``rebuild`` (see :mod:`cuship.builder.uptodate`); its outcome is ``built``, saying so.
    With ``collapse``, jobs a built wheel already serves (see :mod:`cuship.builder.collapse`)
    are not built: their outcome is ``collapsed``, naming that wheel. Progress events (level
    ``progress``, ``data["phase"]`` ``start``/``job-start``/``job-end``) say how far it got.
    """
    ordered = collapse.order(plans) if collapse else list(plans)
    say = _Say(emit)
    counter = _Counter([p.job.id for p in ordered if p.runnable], say, workers)
    say(
        Event(
            level="progress",
            topic="build",
            message=f"{counter.total} of {len(ordered)} jobs to build here",
            data={"phase": "start", "jobs": list(counter.jobs), "total": len(ordered)},
        )
    )
    batch = _Batch(
        environ=environ,
        say=say,
        collapse=collapse,
        counter=counter,
        hold=workers > 1,
        rebuild=rebuild,
    )
    if workers <= 1:
        return tuple(batch.one(plan) for plan in ordered)
    return _pool(batch, ordered, chains(ordered, collapse), workers)


def _pool(
    batch: _Batch, ordered: Sequence[BuildPlan], runs: list[list[int]], workers: int
) -> tuple[Outcome, ...]:
    outcomes: dict[int, Outcome] = {}
    stop = threading.Event()

    def run(indices: list[int]) -> None:
        for i in indices:
            if stop.is_set():
                return
            try:
                outcomes[i] = batch.one(ordered[i])
            except BaseException:
                stop.set()  # before this worker takes another job
                raise

    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="cuship-build")
    futures: list[Future[None]] = []
    try:
        for indices in runs:
            futures.append(pool.submit(run, indices))
        for future in as_completed(futures):
            future.result()  # a bug in a job is raised here, as without a pool
    except BaseException:  # Ctrl-C (KeyboardInterrupt reaches this thread only), or that bug
        stop.set()
        batch.say.close()  # the ended jobs' last words would only be noise
        _end(futures)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return tuple(outcomes[i] for i in range(len(ordered)))


def _end(futures: Sequence[Future[None]]) -> None:
    """Start no more jobs, end the running ones' commands, wait for their workers."""
    for future in futures:
        future.cancel()
    with CHILDREN.stopped():
        wait(futures)


class _Say:
    """The batch's :data:`Emit`: one event at a time from any thread; silent once closed."""

    def __init__(self, emit: Emit) -> None:
        self._emit, self._lock, self._open = emit, threading.RLock(), True

    def __call__(self, event: Event) -> None:
        self.block((event,))

    def block(self, events: Sequence[Event]) -> None:
        """Tell ``events`` together: no other thread's event comes between them."""
        with self._lock:
            for event in events:
                if self._open:
                    self._emit(event)

    def close(self) -> None:
        with self._lock:
            self._open = False


class _Held:
    """One job's events while other jobs run: progress told at once (a ``job-step`` event for
    each step), everything else held until :meth:`release`."""

    def __init__(self, say: _Say) -> None:
        self.say, self.events = say, list[Event]()

    def __call__(self, event: Event) -> None:
        if event.level == "progress":
            self.say(event)
            return
        if "step" in event.data and "job" in event.data:
            data = {**event.data, "phase": "job-step"}
            self.say(dataclasses.replace(event, level="progress", data=data))
        self.events.append(event)

    def release(self) -> None:
        self.say.block(self.events)
        self.events.clear()


class _Counter:
    """Numbers the jobs built here (``[2/4]``) in their progress events."""

    def __init__(self, jobs: list[str], emit: Emit, workers: int) -> None:
        self.jobs, self.total, self.emit, self.workers = tuple(jobs), len(jobs), emit, workers
        self._lock = threading.Lock()
        self._numbers: dict[str, int] = {}

    def start(self, plan: BuildPlan) -> None:
        with self._lock:
            number = self._numbers[plan.job.id] = len(self._numbers) + 1
        python = f"Python {plan.python.describe()}" if plan.python else plan.mode
        share = ""
        if self.workers > 1 and plan.max_jobs is not None:
            share = f"; MAX_JOBS {plan.max_jobs}, its share with {self.workers} jobs at once"
        data = {
            "phase": "job-start",
            "job": plan.job.id,
            "python": python,
            "max_jobs": plan.max_jobs,
        }
        self.emit(progress("build", number, self.total, plan.job.id, python + share, data=data))

    def end(self, plan: BuildPlan, outcome: Outcome, seconds: float) -> None:
        number = self._numbers.get(plan.job.id, 0)
        status, data = outcome.status, {"phase": "job-end", "job": plan.job.id}
        self.emit(progress("build", number, self.total, plan.job.id, status, seconds, data=data))


def _up_to_date(plan: BuildPlan, wheel: Path, record: Mapping[str, Any], emit: Emit) -> Outcome:
    """The outcome of a job whose wheel an earlier run built from the same inputs (its smoke
    test as that run recorded it)."""
    from cuship.wheel.audit import inspect_wheel

    said = f"{wheel.name}: up to date (built before from the same inputs; --rebuild builds it)"
    emit(Event(level="info", topic="build", message=f"{plan.job.id}: {said}"))
    smoke = record.get("smoke")
    result = JobResult(
        job_id=plan.job.id,
        wheel=wheel,
        report=inspect_wheel(wheel),
        verify_problems=(),
        smoke=_smoke_of(smoke) if isinstance(smoke, dict) else None,
        seconds=0.0,
        python=plan.python,
    )
    return Outcome(job_id=plan.job.id, status="built", detail=said, result=result, job=plan.job)


def _smoke_of(record: Mapping[str, Any]) -> Smoke | None:
    """The smoke test a job record kept, said to be the earlier build's."""
    said, env, note = record.get("said"), record.get("env"), record.get("note")
    if env not in ("isolated", "system-site") or not isinstance(said, str | None):
        return None
    earlier = "when it was built" + (f": {note}" if isinstance(note, str) and note else "")
    return Smoke(said=said, env=env, note=earlier)


def _smoke_record(smoke: Smoke | None) -> dict[str, Any] | None:
    if smoke is None:
        return None
    return {"said": smoke.said, "env": smoke.env, "note": smoke.note}


class _Batch:
    """What every job of one batch shares: the environment, the emit, the collapser (one job at
    a time), the counter and the locks on shared things."""

    def __init__(
        self,
        *,
        environ: Mapping[str, str] | None,
        say: _Say,
        collapse: Collapser | None,
        counter: _Counter,
        hold: bool,
        rebuild: bool = False,
    ) -> None:
        self.environ, self.say, self.collapse, self.counter = environ, say, collapse, counter
        self.hold, self.rebuild = hold, rebuild
        self.locks = Locks()
        self._collapsing = threading.Lock()

    def one(self, plan: BuildPlan) -> Outcome:
        """The outcome of ``plan``: collapsed, needing another runner, or built here."""
        with self._collapsing:
            served = self.collapse.skip(plan) if self.collapse else None
        if served is not None:
            outcome = Outcome(
                job_id=plan.job.id, status="collapsed", detail=served.detail, job=plan.job
            )
            if plan.runnable:
                self.counter.start(plan)
                self.counter.end(plan, outcome, 0.0)
            return outcome
        if not plan.runnable:
            return Outcome(
                job_id=plan.job.id, status="needs-runner", detail=plan.reason or "", job=plan.job
            )
        start = time.perf_counter()
        self.counter.start(plan)
        held = _Held(self.say) if self.hold else None
        try:
            outcome = self._build(plan, held or self.say)
        finally:
            if held is not None:
                held.release()
        self.counter.end(plan, outcome, time.perf_counter() - start)
        return outcome

    def _build(self, plan: BuildPlan, emit: Emit) -> Outcome:
        tree = plan_tree_state(plan)  # before the build: an edit during it builds again next
        earlier = None if self.rebuild else reused(plan, tree)
        if earlier is not None:
            return _up_to_date(plan, *earlier, emit)
        outcome = self._built(plan, emit)
        if outcome.status == "built" and outcome.result is not None:
            remember(plan, outcome.result.wheel, tree, _smoke_record(outcome.result.smoke))
        return outcome

    def _built(self, plan: BuildPlan, emit: Emit) -> Outcome:
        collapse = self.collapse
        if collapse:
            with self._collapsing:
                plan = collapse.prepare(plan)
        emit(Event(level="group-start", topic="build", message=plan.job.id))
        build = functools.partial(
            run_plan,
            plan,
            environ=self.environ,
            emit=emit,
            locks=self.locks,
        )
        outcome = dataclasses.replace(outcome_of(plan.job.id, build, emit), job=plan.job)
        if collapse and outcome.result is not None and outcome.status == "built":
            with self._collapsing:
                result = collapse.settle(plan, outcome.result)
                free = collapse.prepare(plan).job
            problems = "; ".join(result.verify_problems)
            outcome = Outcome(
                job_id=result.job_id,
                status="failed" if problems else "built",
                detail=problems or result.wheel.name,
                result=result,
                job=free,
            )
        emit(Event(level="group-end", topic="build", message=plan.job.id))
        return outcome
