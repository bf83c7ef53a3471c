"""Reading bench runs back from the results store (the one ``cuship check`` and ``cuship bench`` write)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cuship.errors import NothingToDo
from cuship.store import ResultRow, RunRecord, Store

__all__ = ["BenchRun", "load_bench_runs"]

BenchRun = tuple[RunRecord, Sequence[ResultRow]]


def load_bench_runs(path: Path) -> tuple[BenchRun, ...]:
    """Every bench run stored at ``path``, oldest first; NothingToDo when there is none."""
    hint = "run `cuship bench` first, or point --store / CUSHIP_STORE at the store it wrote"
    if not path.is_file():
        raise NothingToDo(f"no results store at {str(path)!r}", hint=hint)
    with Store.open(path) as store:
        runs = tuple((run, store.results(run.id or 0)) for run in store.runs(kind="bench"))
    if not runs:
        raise NothingToDo(f"the results store {str(path)!r} holds no bench runs", hint=hint)
    return runs
