"""``cuship ship``: plan → build what this host can → repair/label/verify → index → summary.

Each stage's wall time is kept so a user (and the benchmark) sees where the minutes go.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cuship.build.plan import Host, plan_job
from cuship.build.run import Outcome, build_all, require_buildable
from cuship.compat import load
from cuship.config import load_config
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

    @property
    def failed(self) -> bool:
        return any(o.status == "failed" for o in self.outcomes)

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


def ship(path: Path, out_dir: Path, *, host: Host, emit: Emit = discard) -> ShipReport:
    """Run the whole pipeline for the project at ``path``; wheels and site go under ``out_dir``."""
    from cuship.index.describe import describe_wheel
    from cuship.index.simple import write

    clock = _Clock()
    with clock.run("plan", emit):
        config = load_config(path)
        plans = [
            plan_job(job, cfg, host, mode="local", out_dir=out_dir / "wheels")
            for cfg, job in jobs_with_configs(config, load())
        ]
    require_buildable(plans, repr(str(path)))
    with clock.run("build", emit):
        outcomes = build_all(plans, emit=emit)
    wheels = [o.result.wheel for o in outcomes if o.result is not None and o.status == "built"]
    site = out_dir / "site"
    summary = None
    if wheels:
        with clock.run("index", emit):
            summary = write(wheels, site, describe=describe_wheel, emit=emit)
    return ShipReport(outcomes=outcomes, index=summary, site=site, stages=dict(clock.stages))
