"""``cuship bench history``: the stored bench runs of a project, read and analysed for steps."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuship.bench.history.changepoints import History, histories
from cuship.errors import NothingToDo

__all__ = ["HistoryReport", "bench_history"]


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryReport:
    """The series found in a store, each with its steps."""

    store: Path
    series: tuple[History, ...]

    @property
    def steps(self) -> int:
        return sum(len(h.steps) for h in self.series)

    def summary_line(self) -> str:
        return f"{self.steps} steps in {len(self.series)} series from {self.store}"

    def to_json(self) -> dict[str, Any]:
        return {"store": str(self.store), "series": [h.to_json() for h in self.series]}


def bench_history(
    path: Path,
    store: Path | None = None,
    *,
    case: str | None = None,
    machine: str | None = None,
    seed: int = 0,
) -> HistoryReport:
    """The histories of the store ``--store`` or PATH's config names, filtered by a case glob
    and a machine id prefix; NothingToDo (exit 4) when nothing is stored or nothing matches."""
    from cuship.store.read import load_bench_runs, store_for

    where = store_for(path, store, "bench")
    found = histories(load_bench_runs(where), case=case, machine=machine, seed=seed)
    if not found:
        raise NothingToDo(
            f"no bench results in {str(where)!r} match case {case!r} and machine {machine!r}",
            hint="drop --case / --machine, or list what is stored with `cuship report --kind bench`",
        )
    return HistoryReport(store=where, series=found)
