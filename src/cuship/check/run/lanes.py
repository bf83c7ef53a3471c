"""Lanes: each holds one worker process and runs chunks of (op, engine, dtype) groups on it.

With several lanes each group is cut into chunks of a few cases (two per lane), handed out as
lanes come free, so one slow group (a Numba simulator reduction) is shared out too and sets no
critical path of its own. On a CPU run every lane's worker is a fork of one that has imported
the engines already (:class:`~cuship.check.run.forks.Zygote`), so a lane more costs milliseconds.
Otherwise A worker pays a one-off import for each engine it
serves (torch + triton take a second or more), so chunks go preferably to a lane whose worker
already has their engine, and a lane without such work starts an engine no other lane has yet.
A lane starts its worker and imports the engine before it takes a chunk, so on a small run the
lanes that are ready first do the work and a late one finds nothing left. The costliest chunks
go first.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from cuship.check.declare.inputs import CaseSpec
from cuship.check.report.results import CaseResult
from cuship.check.run.forks import Zygote
from cuship.check.run.workers import Worker, WorkerDied, WorkerSetup

__all__ = ["Lane", "Pending", "PlannedGroup", "useful_lanes"]


# Rough seconds one case takes per engine (to start the slow groups first), and one worker
# takes to start with the engine imported (torch + triton, numba + its simulator): a lane more
# is worth it only when it takes more work off the others than it costs to start.
_CASE_SECONDS = {"numba-sim": 0.4, "triton-interpret": 0.08, "native": 0.02}
_START_SECONDS = {"numba-sim": 3.0, "triton-interpret": 4.0, "native": 0.5}
# A fork of a worker that has the engines: the fork itself (milliseconds), and the first calls
# paid again in the copy (Numba compiles each kernel, torch's autograd and ops warm up: on
# tests/fixtures/idioms about half a second), so a run of a second or two stays on one worker.
_FORK_SECONDS = {"numba-sim": 0.5, "triton-interpret": 1.0, "native": 0.1}


@dataclass(frozen=True, slots=True, kw_only=True)
class PlannedGroup:
    op: str
    engine: str
    dtype: str
    rtol: float
    atol: float
    cases: tuple[CaseSpec, ...]
    skip_reason: str | None = None

    @property
    def key(self) -> str:
        """``op/engine/dtype``, as its results are keyed."""
        return f"{self.op}/{self.engine}/{self.dtype}"

    @property
    def cost(self) -> float:
        """Estimated seconds to run its cases."""
        return len(self.cases) * _CASE_SECONDS.get(self.engine, 0.04)


def useful_lanes(groups: Sequence[PlannedGroup], most: int, *, forked: bool = False) -> int:
    """How many of ``most`` lanes pay for their start: each one more must take more estimated
    work off the others than starting its worker costs (a fresh worker's imports cost seconds,
    so a quick run is often best on one; a ``forked`` one only its first calls again)."""
    total = sum(g.cost for g in groups)
    if forked:
        start = max((_FORK_SECONDS.get(g.engine, 1.0) for g in groups), default=0.0)
    else:
        start = max((_START_SECONDS.get(g.engine, 4.0) for g in groups), default=0.0)
    lanes = 1
    while lanes < most and total / lanes - total / (lanes + 1) > start:
        lanes += 1
    return lanes


def _split(group: PlannedGroup, parts: int) -> list[PlannedGroup]:
    size = max(1, -(-len(group.cases) // max(parts, 1)))
    return [
        replace(group, cases=group.cases[start : start + size])
        for start in range(0, len(group.cases), size)
    ]


class Pending:
    """The groups still to run, handed out with engine affinity (thread-safe)."""

    def __init__(self, groups: Sequence[PlannedGroup], lanes: int = 1) -> None:
        parts = 1 if lanes <= 1 else 2 * lanes
        chunks = [chunk for group in groups for chunk in _split(group, parts)]
        self._groups = sorted(chunks, key=lambda g: -g.cost)
        self._claimed: set[str] = set()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._groups)

    def _choice(self, ready: set[str]) -> int:
        """The index of the chunk for a lane with ``ready`` engines (there is one)."""
        return next(
            (i for i, g in enumerate(self._groups) if g.engine in ready),
            next((i for i, g in enumerate(self._groups) if g.engine not in self._claimed), 0),
        )

    def peek(self, ready: set[str]) -> str | None:
        """The engine of the chunk :meth:`take` would hand out now (None: nothing is left)."""
        with self._lock:
            return self._groups[self._choice(ready)].engine if self._groups else None

    def take(self, ready: set[str]) -> PlannedGroup | None:
        """The next group for a lane whose worker has imported the engines in ``ready``."""
        with self._lock:
            if not self._groups:
                return None
            group = self._groups.pop(self._choice(ready))
            self._claimed.add(group.engine)
            return group


def _request(chunk: PlannedGroup, case: CaseSpec) -> dict[str, object]:
    return {
        "op": chunk.op,
        "engine": chunk.engine,
        "dtype": chunk.dtype,
        "case": case.to_json(),
        "rtol": chunk.rtol,
        "atol": chunk.atol,
    }


class Lane:
    """One worker slot: runs chunks as batches of cases, replacing its worker when it dies."""

    def __init__(
        self,
        setup: WorkerSetup,
        timeout: float,
        *,
        worker: Worker | None = None,
        ready: frozenset[str] = frozenset(),
        zygotes: Sequence[Zygote] = (),
    ) -> None:
        """``worker``: one already started (the probe's or a fork), with the engines in
        ``ready`` imported; ``zygotes``: where new workers come from, a fork of the one that
        has the engine a chunk needs (else they start fresh)."""
        self.setup = setup
        self.zygotes = tuple(zygotes)
        self.timeout = timeout
        self.worker = worker
        self.ready: set[str] = set(ready) if worker is not None else set()
        self._lock = threading.Lock()
        self._warming: Worker | None = None
        self._cancelled = False

    def run(self, chunk: PlannedGroup) -> tuple[CaseResult, ...]:
        """Run the cases of one chunk, in order; a dead worker is replaced for the rest."""
        results: list[CaseResult] = []
        while len(results) < len(chunk.cases):
            results.extend(self._batch(chunk, chunk.cases[len(results) :]))
        return tuple(results)

    def warm(self, engine: str) -> None:
        """Start the worker and import ``engine`` before taking any work: a lane that is slow
        to start holds no chunk the others could have run meanwhile, and :meth:`cancel` stops
        it when they have run everything. A worker that fails to start is left for the first
        chunk to report."""
        try:
            self._ensure(engine, watch=True)
        except WorkerDied:
            with self._lock:
                unstarted = self._warming if self.worker is None else None
            if unstarted is not None:  # killed before its hello: close its log
                unstarted.stop()
            self.close()
        finally:
            with self._lock:
                self._warming = None

    def cancel(self) -> None:
        """Kill the worker this lane is warming up, if it is (called from another thread)."""
        with self._lock:
            self._cancelled = True
            warming = self._warming
        if warming is not None:
            warming.kill()

    def _watch(self, worker: Worker) -> None:
        with self._lock:
            self._warming = worker
            cancelled = self._cancelled
        if cancelled:
            worker.kill()

    def _ensure(self, engine: str, *, watch: bool = False) -> Worker:
        """A live worker with ``engine``'s modules imported (start-up is not timed)."""
        if self.worker is None or engine not in self.ready:
            self._fork(engine)
        if self.worker is None:
            spawned = self._watch if watch else None
            self.worker = Worker.start(self.setup, timeout=max(self.timeout, 60.0), spawned=spawned)
            self.ready = set()
        if engine not in self.ready:
            self.worker.request({"prepare": engine}, timeout=max(self.timeout, 60.0))
            self.ready.add(engine)
        return self.worker

    def _fork(self, engine: str) -> None:
        """Replace the worker with a fork of a zygote that has ``engine`` (when one has: a fork
        costs milliseconds, importing the engine seconds)."""
        source = next((z for z in self.zygotes if engine in z.ready), None)
        if source is None:
            return
        self.close()
        try:
            self.worker = source.fork()
            self.ready = set(source.ready)
        except WorkerDied:  # it died or refused: start fresh workers instead
            self.zygotes = tuple(z for z in self.zygotes if z is not source)

    def _batch(self, chunk: PlannedGroup, cases: tuple[CaseSpec, ...]) -> list[CaseResult]:
        """Send ``cases`` at once, collect answers as they come; stop at the first death."""
        results: list[CaseResult] = []
        mark = time.perf_counter()
        try:
            worker = self._ensure(chunk.engine)
            worker.send({"batch": [_request(chunk, case) for case in cases]})
            mark = time.perf_counter()
            for case in cases:
                raw = worker.receive(timeout=self.timeout)
                now = time.perf_counter()
                results.append(CaseResult.from_worker(case, raw, now - mark))
                mark = now
        except WorkerDied as died:
            self.close()
            raw = {"status": "error", "message": died.message}
            results.append(
                CaseResult.from_worker(cases[len(results)], raw, time.perf_counter() - mark)
            )
        return results

    def close(self) -> None:
        if self.worker is not None:
            self.worker.stop()
            self.worker = None
        self.ready = set()
