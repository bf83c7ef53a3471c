"""Build many jobs: run each runnable plan, keep going past failures, report every outcome."""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from cuship.builder.collapse import Collapser
from cuship.builder.execute import JobResult, run_plan
from cuship.builder.model import BuildPlan
from cuship.errors import CushipError, NothingToDo
from cuship.events import Emit, Event, discard
from cuship.matrix import BuildJob

__all__ = [
    "Outcome",
    "build_all",
    "outcome_of",
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


def require_buildable(plans: Sequence[BuildPlan], what: str) -> None:
    """Raise NothingToDo (exit 4), with every reason, when no plan can run on this host."""
    if any(p.runnable for p in plans):
        return
    reasons = sorted({p.reason or "" for p in plans})
    raise NothingToDo(
        f"nothing of {what} can be built on this host:\n  " + "\n  ".join(reasons),
        hint="build the other jobs on matching runners (cuship matrix --format github), "
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


def build_all(
    plans: Sequence[BuildPlan],
    *,
    environ: Mapping[str, str] | None = None,
    emit: Emit = discard,
    on_done: Callable[[Outcome], None] | None = None,
    collapse: Collapser | None = None,
) -> tuple[Outcome, ...]:
    """Build every runnable plan in order; list the others as needing another runner.

    With ``collapse``, jobs a built wheel already serves (see :mod:`cuship.builder.collapse`)
    are not built: their outcome is ``collapsed``, naming that wheel. Progress events (level
    ``progress``, ``data["phase"]`` ``start``/``job-start``/``job-end``) say how far it got.
    """
    ordered = collapse.order(plans) if collapse else list(plans)
    counter = _Counter([p.job.id for p in ordered if p.runnable], emit)
    emit(
        Event(
            level="progress",
            topic="build",
            message=f"{counter.total} of {len(ordered)} jobs to build here",
            data={"phase": "start", "jobs": list(counter.jobs), "total": len(ordered)},
        )
    )
    outcomes = []
    for plan in ordered:
        outcome = _one(plan, environ, emit, collapse, counter)
        outcomes.append(outcome)
        if on_done is not None:
            on_done(outcome)
    return tuple(outcomes)


class _Counter:
    """Numbers the jobs built here (``[2/4]``) in their progress events."""

    def __init__(self, jobs: list[str], emit: Emit) -> None:
        self.jobs, self.total, self.emit, self.started = tuple(jobs), len(jobs), emit, 0

    def start(self, plan: BuildPlan) -> None:
        self.started += 1
        python = f"Python {plan.python.describe()}" if plan.python else plan.mode
        self.emit(
            Event(
                level="progress",
                topic="build",
                message=f"[{self.started}/{self.total}] {plan.job.id}: {python}",
                data={"phase": "job-start", "job": plan.job.id, "python": python},
            )
        )

    def end(self, job_id: str, outcome: Outcome, seconds: float) -> None:
        self.emit(
            Event(
                level="progress",
                topic="build",
                message=f"[{self.started}/{self.total}] {job_id}: {outcome.status} in {seconds:.1f} s",
                data={"phase": "job-end", "job": job_id, "status": outcome.status},
            )
        )


def _one(
    plan: BuildPlan,
    environ: Mapping[str, str] | None,
    emit: Emit,
    collapse: Collapser | None,
    counter: _Counter,
) -> Outcome:
    served = collapse.skip(plan) if collapse else None
    if served is not None:
        outcome = Outcome(
            job_id=plan.job.id, status="collapsed", detail=served.detail, job=plan.job
        )
        if plan.runnable:
            counter.start(plan)
            counter.end(plan.job.id, outcome, 0.0)
        return outcome
    if not plan.runnable:
        return Outcome(
            job_id=plan.job.id, status="needs-runner", detail=plan.reason or "", job=plan.job
        )
    start = time.perf_counter()
    counter.start(plan)
    outcome = _build(plan, environ, emit, collapse)
    counter.end(plan.job.id, outcome, time.perf_counter() - start)
    return outcome


def _build(
    plan: BuildPlan, environ: Mapping[str, str] | None, emit: Emit, collapse: Collapser | None
) -> Outcome:
    plan = collapse.prepare(plan) if collapse else plan
    emit(Event(level="group-start", topic="build", message=plan.job.id))
    build = functools.partial(
        run_plan, plan, environ=environ, test_import=plan.test_import, emit=emit
    )
    outcome = dataclasses.replace(outcome_of(plan.job.id, build, emit), job=plan.job)
    if collapse and outcome.result is not None and outcome.status == "built":
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
