"""Before a check run: one worker reports where the project was imported from, then the selected
engines' modules are imported, each once.

The probing workers become the run's workers afterwards (the first lane's, or the ones every
worker is forked from), so nothing is imported twice. With ``spread`` > 1 (a run on several
forked workers) the engines are dealt out to that many workers that import them side by side, so
the run waits for the slowest engine's imports, not for their sum. An engine whose import fails
(or kills its worker) is :class:`~cuship.check.run.availability.Unavailable`; when a worker
cannot even start (a check module that fails there), its probing stops and the cases report that
failure as they always have.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from types import TracebackType

from cuship.check.case.engines import engine_imports
from cuship.check.run.availability import Unavailable, unavailable, unavailable_after_death
from cuship.check.run.workers import Worker, WorkerDied, WorkerSetup
from cuship.provenance import Provenance

__all__ = ["EngineProbe", "deal"]

# Rough seconds to import an engine's modules (torch + triton, numba + its simulator).
_IMPORT_SECONDS = {"triton-interpret": 4.0, "triton": 4.0, "numba-sim": 1.0, "numba": 1.0}


def deal(engines: Sequence[str], hands: int) -> list[list[str]]:
    """``engines`` dealt to at most ``hands`` workers, the costliest import first, each to the
    least loaded; the first hand (the worker already started) gets the costliest."""
    hands = max(1, min(hands, len(engines)))
    dealt: list[list[str]] = [[] for _ in range(hands)]
    load = [0.0] * hands
    for engine in sorted(engines, key=lambda e: -_IMPORT_SECONDS.get(e, 2.0)):
        least = min(range(hands), key=lambda i: (load[i], i))
        dealt[least].append(engine)
        load[least] += _IMPORT_SECONDS.get(engine, 2.0)
    return dealt


class _Prober:
    """One probing worker: the engines it imported and the ones that failed."""

    def __init__(self, setup: WorkerSetup, timeout: float, worker: Worker | None) -> None:
        self.setup = setup
        self.timeout = timeout
        self.worker = worker
        self.ready: set[str] = set()
        self.unavailable: list[Unavailable] = []
        self.broken = False

    def probe_all(self, engines: Sequence[str]) -> None:
        for engine in engines:
            if not self.broken:
                self.probe(engine, engine_imports(engine))

    def probe(self, engine: str, modules: Sequence[str]) -> None:
        try:
            if self.worker is None:  # the last probe killed it, or it is to start here
                self.worker = Worker.start(self.setup, timeout=self.timeout)
                self.ready = set()
        except WorkerDied:
            self.broken = True
            return
        try:
            answer = self.worker.request(
                {"prepare": engine, "launch": True},
                timeout=self.timeout,
                what=f"importing {', '.join(modules)} for engine {engine}",
            )
        except WorkerDied as died:
            self.worker.stop()
            self.worker = None
            self.unavailable.append(unavailable_after_death(engine, modules, died.message))
            return
        if answer.get("prepared"):
            self.ready.add(engine)
        else:
            self.unavailable.append(unavailable(engine, answer["problem"]))

    def stop(self) -> None:
        if self.worker is not None:
            self.worker.stop()
            self.worker = None


class EngineProbe:
    """Start one worker for provenance, probe engines (on ``spread`` workers at most), hand the
    workers over to the run."""

    def __init__(self, setup: WorkerSetup, timeout: float, *, spread: int = 1) -> None:
        self.setup = setup
        self.timeout = max(timeout, 60.0)
        self.spread = spread
        self.provenance: Provenance | None = None
        self._probers: list[_Prober] = []
        self._plain: set[str] = set()  # engines with nothing to import

    def __enter__(self) -> EngineProbe:
        try:
            worker = Worker.start(self.setup, timeout=self.timeout, trace=True)
        except WorkerDied as died:
            first = died.message.splitlines()[0] if died.message else "the worker died"
            self.provenance = Provenance(note=f"provenance not collected: {first}")
            broken = _Prober(self.setup, self.timeout, None)
            broken.broken = True
            self._probers = [broken]
            return self
        raw = worker.greeting.get("provenance")
        self.provenance = Provenance.from_json(raw) if raw is not None else None
        self._probers = [_Prober(self.setup, self.timeout, worker)]
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        for prober in self._probers:
            prober.stop()

    def engines(self, names: Sequence[str]) -> tuple[Unavailable, ...]:
        """Import each engine's modules once; the engines that cannot run here, in ``names``
        order."""
        importing = [e for e in names if engine_imports(e)]
        self._plain.update(e for e in names if not engine_imports(e))
        first = self._probers[0]
        if first.broken:
            return ()
        hands = deal(importing, self.spread if self.setup.fork else 1)
        self._probers += [_Prober(self.setup, self.timeout, None) for _ in hands[1:]]
        threads = [
            threading.Thread(target=prober.probe_all, args=(hand,), daemon=True)
            for prober, hand in zip(self._probers[1:], hands[1:], strict=True)
        ]
        for thread in threads:
            thread.start()
        first.probe_all(hands[0] if hands else [])
        for thread in threads:
            thread.join()
        found = {u.engine: u for prober in self._probers for u in prober.unavailable}
        return tuple(found[e] for e in names if e in found)

    def handover(self) -> tuple[tuple[Worker, frozenset[str]], ...]:
        """The live workers, each with the engines it has imported (and those that need no
        import); the probe no longer owns them."""
        workers = []
        for prober in self._probers:
            if prober.worker is not None:
                workers.append((prober.worker, frozenset(prober.ready | self._plain)))
                prober.worker = None
        return tuple(workers)
