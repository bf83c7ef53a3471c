"""Before a check run: one worker reports where the project was imported from, then imports each
selected engine's modules once.

That worker becomes the first lane's worker afterwards, so nothing is imported twice. An engine
whose import fails (or kills the worker) is :class:`~cuship.check.run.availability.Unavailable`;
when the worker cannot even start (a check module that fails there), probing stops and the cases
report that failure as they always have.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType

from cuship.check.case.engines import engine_imports
from cuship.check.run.availability import Unavailable, unavailable, unavailable_after_death
from cuship.check.run.workers import Worker, WorkerDied, WorkerSetup
from cuship.provenance import Provenance

__all__ = ["EngineProbe"]


class EngineProbe:
    """Start one worker for provenance, probe engines on it, hand it to the first lane."""

    def __init__(self, setup: WorkerSetup, timeout: float) -> None:
        self.setup = setup
        self.timeout = max(timeout, 60.0)
        self.worker: Worker | None = None
        self.ready: set[str] = set()
        self.provenance: Provenance | None = None
        self.unavailable: list[Unavailable] = []
        self._broken = False

    def __enter__(self) -> EngineProbe:
        try:
            self.worker = Worker.start(self.setup, timeout=self.timeout, trace=True)
        except WorkerDied as died:
            self._broken = True
            first = died.message.splitlines()[0] if died.message else "the worker died"
            self.provenance = Provenance(note=f"provenance not collected: {first}")
            return self
        raw = self.worker.greeting.get("provenance")
        self.provenance = Provenance.from_json(raw) if raw is not None else None
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self.worker is not None:
            self.worker.stop()
            self.worker = None

    def engines(self, names: Sequence[str]) -> tuple[Unavailable, ...]:
        """Import each engine's modules once; the engines that cannot run here."""
        for engine in names:
            modules = engine_imports(engine)
            if not modules:
                self.ready.add(engine)
            elif not self._broken:
                self._probe(engine, modules)
        return tuple(self.unavailable)

    def _probe(self, engine: str, modules: Sequence[str]) -> None:
        try:
            if self.worker is None:  # the last probe killed it
                self.worker = Worker.start(self.setup, timeout=self.timeout)
                self.ready = set()
        except WorkerDied:
            self._broken = True
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

    def handover(self) -> tuple[Worker | None, frozenset[str]]:
        """The live worker and the engines it has imported; the probe no longer owns it."""
        worker, self.worker = self.worker, None
        return worker, frozenset(self.ready)
