"""``cuship ship``: plan → build what this host can → repair/label/verify → quick check → index.

Each stage's wall time is kept so a user (and the benchmark) sees where the minutes go.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cuship.build.plan import Host, plan_job
from cuship.build.run import Outcome, build_all, require_buildable
from cuship.check.results import CheckReport
from cuship.compat import load
from cuship.config import Config, load_config
from cuship.errors import ToolMissing
from cuship.events import Emit, Event, discard
from cuship.index.simple import IndexSummary
from cuship.matrix import jobs_with_configs

__all__ = ["ShipReport", "ship"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ShipReport:
    outcomes: tuple[Outcome, ...]
    index: IndexSummary | None
    site: Path
    stages: Mapping[str, float] = field(default_factory=dict)
    check: CheckReport | None = None
    cpu_only: bool = False

    @property
    def failed(self) -> bool:
        checked_bad = self.check is not None and self.check.verdict == "failed"
        return checked_bad or any(o.status == "failed" for o in self.outcomes)

    def install_line(self, project: str, url: str | None = None) -> str:
        """The pip command that installs what was shipped from the index."""
        where = url or (self.site / "simple").as_uri()
        return f"pip install {project} --index-url {where}"


class _Clock:
    def __init__(self) -> None:
        self.stages: dict[str, float] = {}

    def run(self, name: str, emit: Emit) -> _Stage:
        emit(Event(level="info", topic="ship", message=f"stage: {name}"))
        return _Stage(self, name)


class _Stage:
    def __init__(self, clock: _Clock, name: str) -> None:
        self.clock, self.name = clock, name

    def __enter__(self) -> None:
        self.start = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.clock.stages[self.name] = time.perf_counter() - self.start


def ship(
    path: Path,
    out_dir: Path,
    *,
    host: Host,
    environ: Mapping[str, str],
    quick_check: bool = True,
    emit: Emit = discard,
) -> ShipReport:
    """Run the whole pipeline for the project at ``path``; wheels and site go under ``out_dir``.

    Without nvcc, a project with ``[build] cpu_fallback`` gets its CPU-only wheel (said plainly);
    one without is refused with exit 3.
    """
    from cuship.index.describe import describe_wheel
    from cuship.index.simple import write

    clock = _Clock()
    with clock.run("plan", emit):
        config = load_config(path)
        plans = [
            plan_job(job, cfg, host, mode="local", out_dir=out_dir / "wheels")
            for cfg, job in jobs_with_configs(config, load())
        ]
    cpu_only = _cpu_only(config, host, emit)
    if not cpu_only:
        require_buildable(plans, repr(str(path)))
    with clock.run("build", emit):
        outcomes = build_all(plans, environ=environ, emit=emit)
        if cpu_only:
            from cuship.build.cpu import plan_cpu, run_cpu

            cpu = run_cpu(
                plan_cpu(config, host, out_dir=out_dir / "wheels"), environ=environ, emit=emit
            )
            outcomes = (*outcomes, cpu)
    check = None
    if quick_check and config.check.modules:
        with clock.run("check", emit):
            check = _quick_check(path, environ, emit)
    wheels = [o.result.wheel for o in outcomes if o.result is not None and o.status == "built"]
    site = out_dir / "site"
    summary = None
    if wheels:
        with clock.run("index", emit):
            summary = write(wheels, site, describe=describe_wheel, emit=emit)
    return ShipReport(
        outcomes=outcomes,
        index=summary,
        site=site,
        stages=dict(clock.stages),
        check=check,
        cpu_only=cpu_only,
    )


def _cpu_only(config: Config, host: Host, emit: Emit) -> bool:
    """Whether this run takes the CPU-only path; exit 3 when there is no nvcc and no such path."""
    if host.nvcc is not None:
        return False
    if not config.build.cpu_fallback:
        raise ToolMissing(
            "no nvcc found: building CUDA wheels needs the CUDA toolkit",
            hint="install it and set CUDA_HOME (or put nvcc on PATH); if the project also builds "
            "without CUDA, set [build] cpu_fallback = true for a CPU-only wheel",
        )
    emit(
        Event(
            level="warning",
            topic="ship",
            message="no nvcc on this host: CPU-only path. One wheel without CUDA kernels (+cpu) is "
            "built; every CUDA job needs a runner with nvcc.",
        )
    )
    return True


def _quick_check(path: Path, environ: Mapping[str, str], emit: Emit) -> CheckReport:
    """``cuship check --quick --device cpu`` on the project, not stored (ship is not a check run)."""
    from cuship.check.session import CheckRequest, run_check

    request = CheckRequest(path=path, target=str(path), device="cpu", quick=True, store=False)
    return run_check(request, environ=environ, emit=emit)
