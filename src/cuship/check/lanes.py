"""Lanes: each holds one worker process and runs chunks of (op, engine, dtype) groups on it.

With several lanes each group is cut into one chunk per lane, so one slow group (a Numba
simulator reduction) is shared out too. A worker pays a one-off import for each engine it
serves (torch + triton take a second or more), so chunks go preferably to a lane whose worker
already has their engine, and a lane without such work starts an engine no other lane has yet.
The costliest chunks go first.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from cuship.check.inputs import CaseSpec
from cuship.check.results import CaseResult
from cuship.check.workers import Worker, WorkerDied, WorkerSetup

__all__ = ["Lane", "Pending", "PlannedGroup"]


# Rough relative cost of one case per engine, to start the slow groups first.
_ENGINE_WEIGHT = {"numba-sim": 20.0, "triton-interpret": 4.0, "native": 1.0}


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
    def cost(self) -> float:
        return len(self.cases) * _ENGINE_WEIGHT.get(self.engine, 2.0)


def _split(group: PlannedGroup, parts: int) -> list[PlannedGroup]:
    size = max(1, -(-len(group.cases) // max(parts, 1)))
    return [
        replace(group, cases=group.cases[start : start + size])
        for start in range(0, len(group.cases), size)
    ]


class Pending:
    """The groups still to run, handed out with engine affinity (thread-safe)."""

    def __init__(self, groups: Sequence[PlannedGroup], lanes: int = 1) -> None:
        chunks = [chunk for group in groups for chunk in _split(group, lanes)]
        self._groups = sorted(chunks, key=lambda g: -g.cost)
        self._claimed: set[str] = set()
        self._lock = threading.Lock()

    def take(self, ready: set[str]) -> PlannedGroup | None:
        """The next group for a lane whose worker has imported the engines in ``ready``."""
        with self._lock:
            if not self._groups:
                return None
            index = next(
                (i for i, g in enumerate(self._groups) if g.engine in ready),
                next(
                    (i for i, g in enumerate(self._groups) if g.engine not in self._claimed),
                    0,
                ),
            )
            group = self._groups.pop(index)
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
    ) -> None:
        """``worker``: one already started (the probe's), with the engines in ``ready`` imported."""
        self.setup = setup
        self.timeout = timeout
        self.worker = worker
        self.ready: set[str] = set(ready) if worker is not None else set()

    def run(self, chunk: PlannedGroup) -> tuple[CaseResult, ...]:
        """Run the cases of one chunk, in order; a dead worker is replaced for the rest."""
        results: list[CaseResult] = []
        while len(results) < len(chunk.cases):
            results.extend(self._batch(chunk, chunk.cases[len(results) :]))
        return tuple(results)

    def _ensure(self, engine: str) -> Worker:
        """A live worker with ``engine``'s modules imported (start-up is not timed)."""
        if self.worker is None:
            self.worker = Worker.start(self.setup, timeout=max(self.timeout, 60.0))
            self.ready = set()
        if engine not in self.ready:
            self.worker.request({"prepare": engine}, timeout=max(self.timeout, 60.0))
            self.ready.add(engine)
        return self.worker

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
