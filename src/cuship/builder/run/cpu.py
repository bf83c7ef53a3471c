"""The CPU-only build: one wheel without CUDA code, for a host that has no nvcc.

A project opts in with ``[build] cpu_fallback = true``: it promises to build without CUDA when
``CUSHIP_CPU_ONLY=1`` (plus its own ``[build] cpu_env``) is set, for instance through a
scikit-build-core override that skips CMake. The wheel is labelled ``+cpu``, must hold no device
code, and goes through the same smoke import as the CUDA wheels.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cuship import settings
from cuship.builder.model import Host, Step, wheel_step
from cuship.builder.run.batch import Outcome, outcome_of
from cuship.builder.run.execute import JobWork, build_job
from cuship.config import Config
from cuship.events import Emit, discard
from cuship.wheel.names import CPU_LABEL

__all__ = ["CPU_LABEL", "CpuPlan", "plan_cpu", "run_cpu"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CpuPlan:
    job_id: str
    step: Step
    raw_dir: Path
    out_dir: Path
    log: Path
    test_import: str | None


def plan_cpu(config: Config, host: Host, *, out_dir: Path) -> CpuPlan:
    """The one CPU-only job of ``config`` on ``host`` (pure)."""
    name = config.project.name or "project"
    version = config.project.version or "0"
    job_id = f"{name}-{version}-cp{host.python.replace('.', '')}-{CPU_LABEL}"
    raw_dir = out_dir / "raw" / job_id
    env = {settings.CPU_ONLY: "1", settings.LOCAL_VERSION: CPU_LABEL, **config.build.cpu_env}
    step = wheel_step(job_id, config, host.python_exe, raw_dir)
    return CpuPlan(
        job_id=job_id,
        step=Step(name=step.name, description=step.description, argv=step.argv, env=env),
        raw_dir=raw_dir,
        out_dir=out_dir,
        log=out_dir / "logs" / f"{job_id}.log",
        test_import=config.build.test_import,
    )


def run_cpu(
    plan: CpuPlan, *, environ: Mapping[str, str] | None = None, emit: Emit = discard
) -> Outcome:
    """Build, label, verify (no device code) and smoke-import the CPU-only wheel."""
    work = JobWork(
        job_id=plan.job_id,
        steps=(plan.step,),
        raw_dir=plan.raw_dir,
        out_dir=plan.out_dir,
        log=plan.log,
        label=CPU_LABEL,
        arches="",
        test_import=plan.test_import,
    )
    build = functools.partial(build_job, work, environ=environ, emit=emit)
    return outcome_of(plan.job_id, build, emit)
