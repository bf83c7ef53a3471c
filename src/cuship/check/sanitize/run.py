"""``cuship check --sanitize``: the GPU engines' cases again, under one compute-sanitizer tool at a
time, each finding mapped back to the op x engine x dtype x case that caused it.

After the plain run, for each tool, the runnable groups of the ``cuda``, ``triton`` and ``numba``
engines run in one worker started as ``compute-sanitizer --tool T ... python -m
cuship.check.run._worker``, one case per request. The tool's report goes to a FIFO that the worker
also writes a marker into after each case (:mod:`cuship.check.sanitize.map` says how the stream
is cut, and how that held on an H100). A worker whose case had findings, or raised, is
replaced before the next case: after a memcheck error the CUDA context is broken and every later
call fails (error 719). The float64 references are NumPy on the host, in the same worker: the
tool instruments device code only, so there is nothing of theirs to report.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cuship.check.case.engines import ENGINES
from cuship.check.declare.inputs import CaseSpec
from cuship.check.report.results import CheckReport
from cuship.check.run.lanes import PlannedGroup
from cuship.check.run.workers import Worker, WorkerDied, WorkerSetup, worker_argv
from cuship.check.sanitize.map import Attribution, attribute, marker, segments
from cuship.check.sanitize.parse import parse
from cuship.check.sanitize.results import (
    SanitizedCase,
    SanitizedStatus,
    SanitizerRun,
    StrayFindings,
    summarise,
)
from cuship.check.sanitize.stream import MarkedStream
from cuship.check.sanitize.tools import PRINT_LIMIT, SANITIZED_ENV, sanitizer_command
from cuship.events import Emit, Event, discard, progress

__all__ = ["TIMEOUT_FACTOR", "SanitizeSettings", "default_jobs", "sanitize", "sanitized_groups"]

TIMEOUT_FACTOR = 4.0  # a sanitized case may take this many times [check] timeout
_MARK_WAIT_S = 10.0  # for a case's marker once its answer is in (it was written before)
_START_S = 120.0  # at least, for a sanitized worker to start or import an engine


@dataclass(frozen=True, slots=True, kw_only=True)
class SanitizeSettings:
    tools: tuple[str, ...]
    sanitizer: str  # the executable
    timeout: float  # per case, already scaled
    print_limit: int = PRINT_LIMIT
    jobs: int = 1  # tools run side by side, each in its own worker and FIFO


def default_jobs(tools: int, cores: int | None = None) -> int:
    """One tool per core, all at once where the cores allow: each pass is its own process and
    log, and most of a pass is Python starting and importing under the tool (on the H100, 6 of
    a memcheck pass's 7.3 s), which overlaps well."""
    return max(1, min(tools, cores if cores is not None else (os.cpu_count() or 1)))


def sanitized_groups(groups: Sequence[PlannedGroup]) -> tuple[PlannedGroup, ...]:
    """The groups a sanitized pass runs: those of GPU engines among ``groups`` (the runnable
    ones, unavailable engines already skipped)."""
    return tuple(g for g in groups if ENGINES[g.engine].device == "cuda" and g.skip_reason is None)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Outcome:
    group: PlannedGroup
    case: CaseSpec
    token: str
    raw: Mapping[str, Any]
    wall_s: float
    ran: bool  # False: the worker died, hung or could not start


def _request(group: PlannedGroup, case: CaseSpec, token: str) -> dict[str, object]:
    return {
        "op": group.op,
        "engine": group.engine,
        "dtype": group.dtype,
        "case": case.to_json(),
        "rtol": group.rtol,
        "atol": group.atol,
        "mark": token,
    }


class _SanitizedLane:
    """One sanitized worker at a time, replaced after a case with findings or an error."""

    def __init__(self, setup: WorkerSetup, stream: MarkedStream, timeout: float) -> None:
        self.setup = setup
        self.stream = stream
        self.timeout = timeout
        self.worker: Worker | None = None
        self.name = ""
        self.ready: set[str] = set()
        self.started = 0
        self.count = 0
        self.broken: str | None = None

    def _ensure(self, engine: str) -> Worker:
        limit = max(self.timeout, _START_S)
        if self.worker is None:
            self.started += 1
            self.name = f"w{self.started}"
            setup = replace(self.setup, marks=(str(self.stream.path), self.name))
            try:
                self.worker = Worker.start(setup, timeout=limit)
            except WorkerDied:
                self.stream.write("exit", self.name)
                raise
            self.ready = set()
        if engine not in self.ready:
            what = f"importing engine {engine} under compute-sanitizer"
            self.worker.request({"prepare": engine}, timeout=limit, what=what)
            self.ready.add(engine)
        return self.worker

    def run(self, group: PlannedGroup, case: CaseSpec) -> _Outcome:
        self.count += 1
        token = str(self.count)
        if self.broken is not None:
            raw = {"status": "error", "message": self.broken}
            return _Outcome(group=group, case=case, token=token, raw=raw, wall_s=0.0, ran=False)
        try:
            worker = self._ensure(group.engine)
        except WorkerDied as died:
            self.broken = f"not run: the sanitized worker could not start: {died.message}"
            self.retire()
            raw = {"status": "error", "message": self.broken}
            return _Outcome(group=group, case=case, token=token, raw=raw, wall_s=0.0, ran=False)
        mark = time.perf_counter()
        try:
            raw = worker.request({"batch": [_request(group, case, token)]}, timeout=self.timeout)
            ran = True
        except WorkerDied as died:
            raw, ran = {"status": "error", "message": died.message}, False
            self._close_case(token)
        wall = time.perf_counter() - mark
        if not ran or raw.get("status") == "error" or self._reported(token):
            self.retire()
        return _Outcome(group=group, case=case, token=token, raw=raw, wall_s=wall, ran=ran)

    def _close_case(self, token: str) -> None:
        """The worker died in the case (its sanitizer has exited: everything either wrote is in
        the FIFO): mark the case's end for it, so that what the tool said belongs to the case."""
        if not self.stream.wait_for(marker("case", token), 1.0):
            self.stream.write("case", token)

    def _reported(self, token: str) -> bool:
        """Whether the tool reported anything for the case (a missing marker counts as yes)."""
        if not self.stream.wait_for(marker("case", token), _MARK_WAIT_S):
            return True
        for segment in reversed(segments(self.stream.text())):
            if segment.event == "case" and segment.label == token:
                return bool(parse(segment.text).findings)
        return True

    def retire(self) -> None:
        """Stop the worker (the sanitizer writes its summary as it exits), then mark its end."""
        if self.worker is not None:
            self.worker.stop()
            self.worker = None
            self.stream.write("exit", self.name)
        self.ready = set()


def _status(outcome: _Outcome, findings: int, plain: str | None) -> SanitizedStatus:
    if findings:
        return "failed"
    if not outcome.ran or (outcome.raw.get("status") == "error" and plain != "error"):
        return "error"
    return "passed"


def _case(
    outcome: _Outcome, attribution: Attribution, plain: Mapping[tuple[str, int], Any]
) -> SanitizedCase:
    group, case = outcome.group, outcome.case
    findings = attribution.cases.get(outcome.token, ())
    before = plain.get((group.key, case.index))
    status = _status(outcome, len(findings), None if before is None else before.status)
    message = outcome.raw.get("message") if outcome.raw.get("status") != "passed" else None
    return SanitizedCase(
        op=group.op,
        engine=group.engine,
        dtype=group.dtype,
        case=case,
        status=status,
        report=summarise(findings),
        message=message,
        wall_s=outcome.wall_s,
        plain_s=None if before is None else before.wall_s,
    )


def _progress(
    tool: str, group: PlannedGroup, outcomes: Sequence[_Outcome], done: int, total: int
) -> Event:
    took = sum(o.wall_s for o in outcomes)
    data = {"key": group.key, "tool": tool, "cases": len(outcomes)}
    status = f"{len(outcomes)} cases"
    stage = f"sanitize {tool}"
    return progress("check", done, total, group.key, status, took, stage=stage, data=data)


def _pass(
    tool: str,
    groups: Sequence[PlannedGroup],
    setup: WorkerSetup,
    settings: SanitizeSettings,
    directory: Path,
    emit: Emit,
) -> tuple[list[_Outcome], str, int]:
    """Run every case of ``groups`` under ``tool``: the outcomes, the stream, workers started."""
    stream = MarkedStream(directory / f"{tool}.log")
    prefix = sanitizer_command(
        settings.sanitizer, tool, stream.path, print_limit=settings.print_limit
    )
    sanitized = replace(setup, prefix=prefix, env={**setup.env, **SANITIZED_ENV})
    lane = _SanitizedLane(sanitized, stream, settings.timeout)
    outcomes: list[_Outcome] = []
    try:
        for number, group in enumerate(groups, 1):
            done = [lane.run(group, case) for case in group.cases]
            outcomes += done
            emit(_progress(tool, group, done, number, len(groups)))
    finally:
        lane.retire()
        stream.close()
    return outcomes, stream.text(), lane.started


def _shown(tool: str, setup: WorkerSetup, settings: SanitizeSettings) -> tuple[str, ...]:
    """How the pass starts its workers, the FIFO written ``<log>``."""
    prefix = sanitizer_command(
        settings.sanitizer, tool, Path("<log>"), print_limit=settings.print_limit
    )
    return tuple(worker_argv(replace(setup, prefix=prefix)))


def _one_tool(
    tool: str,
    groups: Sequence[PlannedGroup],
    plain: Mapping[tuple[str, int], Any],
    setup: WorkerSetup,
    settings: SanitizeSettings,
    emit: Emit,
) -> SanitizerRun:
    shown = _shown(tool, setup, settings)
    if not groups:
        note = "nothing to sanitize: no cuda, triton or numba case ran in the plain run"
        return SanitizerRun(tool=tool, command=shown, note=note)
    cases = sum(len(g.cases) for g in groups)
    emit(Event(level="info", topic="check", message=f"sanitize: {tool} over {cases} cases"))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="cuship-sanitize-") as tmp:
        outcomes, text, workers = _pass(tool, groups, setup, settings, Path(tmp), emit)
    attribution = attribute(text, [o.token for o in outcomes])
    return SanitizerRun(
        tool=tool,
        command=shown,
        cases=tuple(_case(o, attribution, plain) for o in outcomes),
        unattributed=tuple(
            StrayFindings(where=s.where, report=summarise(s.findings))
            for s in attribution.unattributed
        ),
        wall_s=time.perf_counter() - started,
        workers=workers,
        errors=attribution.errors,
        not_printed=attribution.not_printed,
        probes=attribution.probes,
    )


def sanitize(
    groups: Sequence[PlannedGroup],
    plain: CheckReport,
    setup: WorkerSetup,
    settings: SanitizeSettings,
    *,
    emit: Emit = discard,
) -> tuple[SanitizerRun, ...]:
    """One pass per tool over the GPU engines' cases among ``groups``, up to ``settings.jobs``
    tools at once; ``plain``: the plain run, for each case's time and outcome there."""
    chosen = sanitized_groups(groups)
    before = {(g.key, c.case.index): c for g in plain.groups for c in g.cases}

    def one(tool: str) -> SanitizerRun:
        return _one_tool(tool, chosen, before, setup, settings, emit)

    if settings.jobs <= 1 or len(settings.tools) <= 1:
        return tuple(one(tool) for tool in settings.tools)
    with ThreadPoolExecutor(max_workers=settings.jobs, thread_name_prefix="sanitize") as pool:
        return tuple(pool.map(one, settings.tools))  # in the order asked
