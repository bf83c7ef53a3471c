"""Reading the results store back, for every command that does: ``cuship report`` (runs in a time
window), ``cuship bench history`` and ``cuship dashboard`` (every bench run); and which store a
project's commands use."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cuship.config import has_config, load_config
from cuship.errors import NothingToDo
from cuship.store import DEFAULT_PATH, ResultRow, RunKind, RunRecord, Store, store_path

__all__ = ["BenchRun", "StoredRun", "load_bench_runs", "load_runs", "store_for"]


def store_for(
    path: Path,
    store: Path | None,
    section: Literal["check", "bench"] = "check",
    environ: Mapping[str, str] | None = None,
) -> Path:
    """``--store``, else ``CUSHIP_STORE``, else ``[check] store`` (or ``[bench] store``) of PATH.

    A directory without any cuship configuration uses the default store under it; a
    configuration that does not load is an error (a typo must not read another store).
    """
    environ = os.environ if environ is None else environ
    if store is not None:
        return store
    if not has_config(path):
        return store_path(path, DEFAULT_PATH, environ)
    config = load_config(path)
    configured = config.bench.store if section == "bench" else config.check.store
    return store_path(config.root, configured, environ)


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredRun:
    run: RunRecord
    results: tuple[ResultRow, ...]

    def to_json(self) -> dict[str, object]:
        """One run of ``cuship report --format json``: the run and every result row."""
        r = self.run
        return {
            "id": r.id,
            "kind": r.kind,
            "started": r.started,
            "finished": r.finished,
            "project": r.project,
            "verdict": r.verdict,
            "cuship_version": r.cuship_version,
            "meta": dict(r.meta),
            "fingerprint": dict(r.fingerprint),
            "results": [
                {
                    "key": row.key,
                    "status": row.status,
                    "numbers": dict(row.numbers),
                    "payload": dict(row.payload),
                }
                for row in self.results
            ],
        }

    def counts(self) -> Mapping[str, int]:
        out: dict[str, int] = {}
        for row in self.results:
            out[row.status or "?"] = out.get(row.status or "?", 0) + 1
        return out


def load_runs(
    path: Path, *, since: float | None = None, kind: RunKind | None = None
) -> tuple[StoredRun, ...]:
    """Runs stored at ``path`` since ``since`` (epoch seconds); NothingToDo when there are none."""
    if not path.exists():  # one that is there but no file (a FIFO) is refused by open_read
        raise NothingToDo(
            f"no results store at {str(path)!r}",
            hint="run `cuship check` first, or point --store / CUSHIP_STORE at the store",
        )
    with Store.open_read(path) as store:
        runs = tuple(
            StoredRun(run=run, results=store.results(run.id or 0))
            for run in store.runs(kind=kind, since=since)
        )
    if not runs:
        raise NothingToDo(
            f"no runs in {str(path)!r} in the time asked for", hint="widen --since-hours"
        )
    return runs


BenchRun = tuple[RunRecord, Sequence[ResultRow]]


def load_bench_runs(path: Path) -> tuple[BenchRun, ...]:
    """Every bench run stored at ``path``, oldest first; NothingToDo when there is none."""
    hint = "run `cuship bench` first, or point --store / CUSHIP_STORE at the store it wrote"
    if not path.exists():
        raise NothingToDo(f"no results store at {str(path)!r}", hint=hint)
    with Store.open_read(path) as store:
        runs = tuple((run, store.results(run.id or 0)) for run in store.runs(kind="bench"))
    if not runs:
        raise NothingToDo(f"the results store {str(path)!r} holds no bench runs", hint=hint)
    return runs
