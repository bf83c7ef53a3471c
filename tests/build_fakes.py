"""A built job's result without a build: for tests that replace the builder with a fake."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cuship.builder.host.interpreters import Interpreter
from cuship.builder.model import BuildPlan
from cuship.builder.run.execute import JobResult, JobWork
from cuship.builder.run.smoke import Smoke
from cuship.wheel.audit import WheelReport


def job_result(
    plan: BuildPlan,
    *,
    smoke: Smoke | None = None,
    seconds: float = 0.0,
    python: Interpreter | None = None,
) -> JobResult:
    """What building ``plan`` would give: a wheel named after the job, no extensions."""
    report = WheelReport(
        path=f"/out/{plan.job.id}.whl",
        filename=f"{plan.job.id}.whl",
        name="cuvecops",
        version="0.1.0",
        local=plan.job.label,
        tags=(),
        size=1,
        extensions=(),
        bundled_libs=(),
        bundled_cuda_libs=(),
    )
    return JobResult(
        job_id=plan.job.id,
        wheel=Path(report.path),
        report=report,
        verify_problems=(),
        smoke=smoke,
        seconds=seconds,
        python=python,
    )


def job_work(tmp_path: Path, *, job_id: str = "cudaxpy-cu130", **fields: Any) -> JobWork:
    """A job as the runner takes it, with no steps (its wheel is made by the test): work under
    ``tmp_path``, label cu130; ``fields`` replace any of JobWork's (arches, floor, smoke...)."""
    given: dict[str, Any] = {
        "steps": (),
        "raw_dir": tmp_path / "work",
        "out_dir": tmp_path / "out",
        "log": tmp_path / "job.log",
        "label": "cu130",
        "arches": "9.0",
    }
    return JobWork(job_id=job_id, **{**given, **fields})
