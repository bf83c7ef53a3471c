"""``cuship gpu-run``: the whole GPU job in one command, on any GPU machine.

Choose the wheel that fits this machine among local files (the resolver's rules), install it
into a fresh venv (or in place) with its dependencies checked, then run pytest ``--require-gpu``,
``cuship check --device cuda`` and ``cuship bench --assert-floors`` with that interpreter, the
CPU interpreters off and the project's source kept from shadowing the wheel; summarise in
``RESULTS/gpu-run.json``.

``plan`` is pure (install commands, stage commands and environment); ``wheels.choose`` is pure;
``execute`` runs; ``session.gpu_run`` puts them in order; ``results`` holds the exit rule.
"""

from __future__ import annotations

from cuship.gpurun.plan import (
    STAGE_ENV,
    Inside,
    InstallPlan,
    ProjectFacts,
    StagePlan,
    plan_install,
    plan_stages,
    project_facts,
)
from cuship.gpurun.results import PRECEDENCE, GpuRunReport, overall_exit, stage_code
from cuship.gpurun.session import GpuRunRequest, gpu_run
from cuship.gpurun.wheels import LocalWheels, NoWheelFits, WheelChoice, choose, read_wheels

__all__ = [
    "PRECEDENCE",
    "STAGE_ENV",
    "GpuRunReport",
    "GpuRunRequest",
    "Inside",
    "InstallPlan",
    "LocalWheels",
    "NoWheelFits",
    "ProjectFacts",
    "StagePlan",
    "WheelChoice",
    "choose",
    "gpu_run",
    "overall_exit",
    "plan_install",
    "plan_stages",
    "project_facts",
    "read_wheels",
    "stage_code",
]
