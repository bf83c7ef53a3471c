"""The torch axis only where it means something.

A wheel whose torch ABI is ``none`` (it links no torch) or ``stable`` (only torch's stable C shim)
serves every torch of the matrix, and either C++ ABI. With ``[matrix] torch_axis = "auto"`` the
builder builds the first job, reads that ABI from the wheel, and then builds one wheel per
combination without torch (``+cu130``): the jobs that differ from a built one only in torch or
cxx11abi are *collapsed* onto it. The verdict is recorded in ``.cuship/torch-abi.json`` so later
runs (``cuship matrix``, ``build``, ``ship``) expand the collapsed matrix without building.

The decisions are pure functions of jobs and reports; :class:`Collapser` holds one build's state
and does the two writes (the relabelled wheel, the record).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version

from cuship._fs import remove_file
from cuship.builder.model import BuildPlan, Step
from cuship.builder.record import read_record, write_record
from cuship.builder.run.execute import JobResult
from cuship.compat import Compat
from cuship.config import Config
from cuship.events import Emit, Event, Level, discard
from cuship.matrix import (
    AbiRecord,
    BuildJob,
    TorchFreeKey,
    expand_all,
    torch_bound_fields,
    torch_free_key,
    without_torch,
)
from cuship.wheel.torchabi import TorchAbi

__all__ = [
    "AbiRecord",
    "Collapser",
    "Policy",
    "Served",
    "axis_notes",
    "build_order",
    "collapses",
    "relabel_plan",
    "served_by",
    "start",
    "torch_free_key",
    "without_torch",
]

"""Where the torch ABI of a project's wheels is recorded, relative to its root."""


def collapses(torch_abi: TorchAbi) -> bool:
    """Whether a wheel of this torch ABI serves every torch (and either C++ ABI)."""
    return torch_abi in ("none", "stable")


@dataclass(frozen=True, slots=True, kw_only=True)
class Served:
    """The built wheel that serves the jobs collapsed onto it."""

    wheel: str
    job: str
    torch_abi: TorchAbi

    @property
    def detail(self) -> str:
        why = AbiRecord(project="", version="", torch_abi=self.torch_abi, wheel="", job="").why
        return f"served by {self.wheel}: it {why} (torch_abi {self.torch_abi})"


def served_by(job: BuildJob, served: Mapping[TorchFreeKey, Served]) -> Served | None:
    """The drop decision: the built wheel that already serves ``job``, or None to build it."""
    return served.get(torch_free_key(job))


def build_order(plans: Sequence[BuildPlan]) -> list[BuildPlan]:
    """Lowest torch first (stable otherwise), so the wheel that serves a group is built against
    its oldest torch: a stable wheel's ``torch>=X.Y`` then covers every torch of the group."""
    return sorted(plans, key=lambda p: p.job.torch or Version("0"))


def relabel_plan(plan: BuildPlan, job: BuildJob) -> BuildPlan:
    """``plan`` building ``job`` (a torch-free relabel of its job): the label its build sees."""
    from cuship import settings

    def step(s: Step) -> Step:
        if settings.LOCAL_VERSION not in s.env:
            return s
        return dataclasses.replace(s, env={**s.env, settings.LOCAL_VERSION: job.label})

    return dataclasses.replace(plan, job=job, steps=tuple(step(s) for s in plan.steps))


@dataclass(frozen=True, slots=True, kw_only=True)
class Policy:
    """Whether a config's builds may collapse the torch axis, and why not when they may not."""

    root: Path
    active: bool  # a torch axis and torch_axis = "auto"
    template: str | None
    blocked: str | None = None  # a custom label template that names torch

    @classmethod
    def of(cls, config: Config) -> Policy:
        bound = torch_bound_fields(config.label.template)
        blocked = (
            f"[label] template {config.label.template!r} names {{{bound[0]}}}" if bound else None
        )
        return cls(
            root=config.root,
            active=bool(config.matrix.torch) and config.matrix.torch_axis == "auto",
            template=config.label.template,
            blocked=blocked,
        )


class Collapser:
    """One build's collapse state: the verdict per project and version, the wheels built."""

    def __init__(
        self, policy: Policy, *, seed: AbiRecord | None = None, emit: Emit = discard
    ) -> None:
        self.policy = policy
        self.emit = emit
        self.verdicts: dict[tuple[str, str], AbiRecord] = {}
        if seed is not None:
            self.verdicts[(seed.project, seed.version)] = seed
        self.served: dict[TorchFreeKey, Served] = {}
        self._warned = False

    def _collapsing(self, job: BuildJob) -> bool:
        verdict = self.verdicts.get((job.project, job.version))
        active = self.policy.active and self.policy.blocked is None
        return active and verdict is not None and verdict.torch_free

    def order(self, plans: Sequence[BuildPlan]) -> list[BuildPlan]:
        """The order to build ``plans`` in."""
        return build_order(plans) if self.policy.active else list(plans)

    def may_become(self, plan: BuildPlan) -> BuildJob:
        """The job ``plan``'s wheel may end up labelled as: without torch when the axis may
        collapse (whether or not it will), else its own."""
        if not self.policy.active or self.policy.blocked is not None:
            return plan.job
        return without_torch(plan.job, self.policy.template)

    def skip(self, plan: BuildPlan) -> Served | None:
        """The wheel that serves ``plan``'s job, when it need not be built."""
        return served_by(plan.job, self.served) if self._collapsing(plan.job) else None

    def prepare(self, plan: BuildPlan) -> BuildPlan:
        """``plan`` as it should be built: without torch in its label once the axis collapsed."""
        if not self._collapsing(plan.job):
            return plan
        free = without_torch(plan.job, self.policy.template)
        return plan if free == plan.job else relabel_plan(plan, free)

    def settle(self, plan: BuildPlan, result: JobResult) -> JobResult:
        """After ``plan`` built ``result``: decide (first wheel of its project), relabel, record."""
        if not self.policy.active:
            return result
        job, abi = plan.job, result.report.torch_abi
        verdict = self.verdicts.get((job.project, job.version))
        if verdict is not None and verdict.torch_free == collapses(abi):
            return self._serve(job, result, verdict)
        if verdict is not None:
            self._event(
                "warning",
                f"{result.wheel.name}: torch_abi {abi}, but the record said "
                f"{verdict.torch_abi}; recorded again",
            )
        verdict = AbiRecord(
            project=job.project, version=job.version, torch_abi=abi, wheel="", job=job.id
        )
        result = self._serve(job, result, verdict)
        verdict = dataclasses.replace(verdict, wheel=result.wheel.name)
        self.verdicts[(job.project, job.version)] = verdict
        write_record(self.policy.root, verdict)
        return result

    def _serve(self, job: BuildJob, result: JobResult, verdict: AbiRecord) -> JobResult:
        """Relabel a torch-free wheel and let it serve its group."""
        if not verdict.torch_free:
            return result
        if self.policy.blocked is not None:
            self._warn_blocked(result.wheel.name, verdict)
            return result
        result = self._relabel(job, result)
        self.served[torch_free_key(job)] = Served(
            wheel=result.wheel.name, job=result.job_id, torch_abi=verdict.torch_abi
        )
        return result

    def _relabel(self, job: BuildJob, result: JobResult) -> JobResult:
        from cuship.wheel.carried import carried_report
        from cuship.wheel.write.retag import retag

        free = without_torch(job, self.policy.template)
        if free.label == job.label:
            return result
        # only the label changes: the binaries, and so their verification and their report
        # (carried over, not read again), stay as they were
        wheel = retag(result.wheel, local=free.label, out_dir=result.wheel.parent)
        report = carried_report(result.report, result.wheel, wheel)
        remove_file(result.wheel.parent, result.wheel.name)
        self._event(
            "info",
            f"{job.id}: {wheel.name} serves every torch of the matrix "
            f"(torch_abi {report.torch_abi}): relabelled +{free.label}",
        )
        return dataclasses.replace(result, job_id=free.id, wheel=wheel, report=report)

    def _warn_blocked(self, wheel: str, verdict: AbiRecord) -> None:
        if self._warned:
            return
        self._warned = True
        self._event(
            "warning",
            f"{wheel} {verdict.why} (torch_abi {verdict.torch_abi}), but {self.policy.blocked}: "
            "the torch axis is kept; drop the torch fields from the template to build one wheel "
            "per combination",
        )

    def _event(self, level: Level, message: str) -> None:
        self.emit(Event(level=level, topic="build", message=message))


def start(config: Config, emit: Emit = discard) -> tuple[AbiRecord | None, Collapser]:
    """The record under the config's root (pass it to :func:`~cuship.matrix.expand`) and the
    :class:`Collapser` for a build of the config's jobs, seeded with it."""
    record = read_record(config.root)
    return record, Collapser(Policy.of(config), seed=record, emit=emit)


def axis_notes(config: Config, compat: Compat) -> tuple[str, ...]:
    """What the recorded torch ABI does to the config's matrix (``cuship matrix --explain``'s
    sentence), e.g. ``torch axis collapsed: … links no torch …: 12 jobs → 4``."""
    return expand_all(config, compat, torch_abi=read_record(config.root)).notes
