"""Synthetic bench runs in the store format of the bench contract, for history and dashboard tests."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from cuship.store import ResultRow, RunRecord, Store

T0 = 1_790_000_000.0  # a fixed epoch (2026-09) so pages and JSON do not depend on the clock

FINGERPRINT: Mapping[str, Any] = {
    "machine_id": "a1b2c3d4e5f6",
    "gpu": "NVIDIA H100 80GB HBM3",
    "gpu_count": 1,
    "driver": "580.65.06",
    "cuda": "13.0",
    "sm_clock_mhz": 1980,
    "max_sm_clock_mhz": 1980,
    "power_limit_w": 700.0,
    "cpu_model": "AMD EPYC 9454",
    "cpu_count": 16,
    "python": "3.11.9",
    "packages": {"torch": "2.13.0", "triton": "3.5.0"},
    "timer": "cuda-events",
}


def bench_row(
    case: str,
    params: Mapping[str, Any],
    samples: Sequence[float],
    *,
    status: str = "ok",
    work_bytes: float | None = None,
) -> ResultRow:
    """One ResultRow as the bench runner writes it (key, payload, numbers)."""
    inner = ",".join(f"{k}={params[k]}" for k in sorted(params))
    key = f"{case}[{inner}]" if params else case
    ordered = sorted(samples)
    median = ordered[len(ordered) // 2]
    numbers: dict[str, float] = {"median": median, "mean": sum(samples) / len(samples)}
    numbers["min"], numbers["stdev"], numbers["rel_noise"] = ordered[0], 0.0, 0.01
    if work_bytes is not None:
        numbers["gbps"] = work_bytes / median / 1e9
    payload = {
        "case": case,
        "params": dict(params),
        "unit": "s",
        "samples": list(samples),
        "throttled": [],
        "work": {"bytes": work_bytes, "flops": None, "ops": None},
        "rel_noise": 0.01,
        "stop_reason": "noise-target",
        "error": None,
    }
    return ResultRow(key=key, status=status, payload=payload, numbers=numbers)


def bench_run(index: int, fingerprint: Mapping[str, Any] = FINGERPRINT) -> RunRecord:
    return RunRecord(
        id=index + 1,  # what the store gives the run when they are recorded in order
        kind="bench",
        started=T0 + 3600.0 * index,
        finished=T0 + 3600.0 * index + 60.0,
        fingerprint=fingerprint,
        cuship_version="0.1.0",
        project="cuvecops",
        verdict="ok",
        meta={
            "format": "cuship-bench/1",
            "seeds": 1,
            "repeats": 5,
            "label": f"v0.{index}",
            "code_hash": {},
            "path": ".",
        },
    )


def stepped(step_at: int, factor: float, noise: float, seed: int) -> Callable[[int], float]:
    """Per-run true time: 1 ms, times ``factor`` from run ``step_at`` on, with Gaussian noise."""
    rng = random.Random(seed)
    return lambda i: 1e-3 * (factor if i >= step_at else 1.0) * (1.0 + rng.gauss(0.0, noise))


def synthetic_runs(
    n: int = 30,
    *,
    step_at: int = 12,
    factor: float = 1.10,
    noise: float = 0.01,
    seed: int = 0,
    case: str = "vecadd",
) -> list[tuple[RunRecord, list[ResultRow]]]:
    """``n`` runs of ``case`` (two sizes) on one machine, slower by ``factor`` from ``step_at``."""
    level = stepped(step_at, factor, noise, seed)
    rng = random.Random(seed + 1)
    runs = []
    for i in range(n):
        rows = []
        for size in (1024, 1 << 20):
            centre = level(i) * (size / 1024) ** 0.5
            samples = [centre * (1.0 + rng.gauss(0.0, 0.002)) for _ in range(7)]
            rows.append(bench_row(case, {"n": size}, samples, work_bytes=12.0 * size))
        runs.append((bench_run(i), rows))
    return runs


def write_store(path: Path, runs: Sequence[tuple[RunRecord, Sequence[ResultRow]]]) -> Path:
    with Store.open(path) as store:
        for run, rows in runs:
            store.record(run, rows)
    return path
