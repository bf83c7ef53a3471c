"""Build many jobs: run each runnable plan, keep going past failures, report every outcome."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from cuship.builder.execute import JobResult, run_plan
from cuship.builder.model import BuildPlan
from cuship.errors import CushipError, NothingToDo
from cuship.events import Emit, Event, discard

__all__ = [
    "Outcome",
    "build_all",
    "outcome_of",
    "require_buildable",
]

Status = Literal["built", "needs-runner", "failed"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    job_id: str
    status: Status
    detail: str
    result: JobResult | None = None


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
) -> tuple[Outcome, ...]:
    """Build every runnable plan in order; list the others as needing another runner."""
    outcomes = []
    for plan in plans:
        if not plan.runnable:
            outcome = Outcome(job_id=plan.job.id, status="needs-runner", detail=plan.reason or "")
        else:
            emit(Event(level="group-start", topic="build", message=plan.job.id))
            build = functools.partial(
                run_plan, plan, environ=environ, test_import=plan.test_import, emit=emit
            )
            outcome = outcome_of(plan.job.id, build, emit)
            emit(Event(level="group-end", topic="build", message=plan.job.id))
        outcomes.append(outcome)
        if on_done is not None:
            on_done(outcome)
    return tuple(outcomes)
