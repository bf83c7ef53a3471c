"""Jobs built at once: the four local Python jobs of examples/cuvecops (3.10-3.13 x CUDA 13.0)
with ``--parallel 1`` and ``--parallel 2`` in one run, and the ratio (goal: >= 1.6x on 2 cores).

Run: python benchmarks/bench_build_parallel.py [--ship]

Each run gets a fresh output directory (the build venvs of the non-running Pythons are made
inside the timed run) and a private sccache server (see ``bench_build_pythons.Cold``): first
with an empty cache each (cold), then with one cache warmed by an untimed build (warm, as a
re-run or a CI with a kept cache). Cold, the compiles themselves keep two cores busy and jobs at
once have little idle time to fill; warm, a job is mostly single-threaded work (pip, CMake's
configure, repair, the smoke venv). ``--ship`` also times ``cuship ship --no-check`` (plan,
build, index) both ways, cold.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any

from bench_build_pythons import EXAMPLE, PYTHONS, REPO, Cold, cuship

JOBS = [f"cuvecops-0.1.0-cp{p.replace('.', '')}-cu130" for p in PYTHONS]


def build(root: Path, name: str, parallel: int, cache: str | None = None) -> dict[str, Any]:
    """The four jobs with ``--parallel``, into a fresh output ``name``; ``cache``: a shared
    sccache's name (else an empty one of its own)."""
    with Cold(root, cache or name, REPO / "src") as cold:
        picks = [a for job in JOBS for a in ("--job", job)]
        args = ["build", str(EXAMPLE), *picks, "-o", str(root / name)]
        seconds, outcomes = cuship([*args, "--parallel", str(parallel)], cold.env)
        stats = cold.stats()
    return {
        "seconds": seconds,
        "order": [o["job"] for o in outcomes],
        "status": {o["job"]: o["status"] for o in outcomes},
        "per_job": {o["job"]: round(o.get("seconds", 0.0), 1) for o in outcomes},
        "sccache": stats,
    }


def ship(root: Path, parallel: int) -> dict[str, Any]:
    name = f"ship-p{parallel}"
    with Cold(root, name, REPO / "src") as cold:
        args = ["ship", str(EXAMPLE), "--no-check", "-o", str(root / name)]
        seconds, report = cuship([*args, "--parallel", str(parallel)], cold.env)
        stats = cold.stats()
    built = [j["job"] for j in report["jobs"] if j["status"] == "built"]
    return {"seconds": seconds, "built": built, "stages": report["stages"], "sccache": stats}


def _line(name: str, run: dict[str, Any]) -> str:
    detail = run.get("per_job") or run.get("stages")
    return f"  {name:<13} {run['seconds']:6.1f} s  {detail}  sccache {run['sccache']}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ship", action="store_true", help="also time cuship ship both ways")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-parallel-") as tmp:
        root = Path(tmp)
        one, two = build(root, "cold-p1", 1), build(root, "cold-p2", 2)
        build(root, "warm-up", 1, cache="warm")  # untimed: fills the shared cache
        warm = build(root, "warm-p1", 1, cache="warm"), build(root, "warm-p2", 2, cache="warm")
        ships = (ship(root, 1), ship(root, 2)) if args.ship else None
    cores = os.cpu_count()
    print(f"cuvecops: the four CUDA 13.0 jobs, fresh output, {cores} cores")
    for label, (a, b) in (("cold sccache", (one, two)), ("warm sccache", warm)):
        print(f" {label}:")
        print(_line("--parallel 1", a))
        print(_line("--parallel 2", b))
        built = all(s == "built" for run in (a, b) for s in run["status"].values())
        print(f"  all built: {'yes' if built else 'no: ' + str(a['status']) + str(b['status'])}")
        print(f"  results in plan order both ways: {a['order'] == b['order'] == JOBS}")
        print(f"  --parallel 1 / --parallel 2 = {a['seconds'] / b['seconds']:.2f}x (goal >= 1.6x)")
    if ships is not None:
        print("cuship ship --no-check (plan, build, index):")
        print(_line("--parallel 1", ships[0]))
        print(_line("--parallel 2", ships[1]))
        ratio = ships[0]["seconds"] / ships[1]["seconds"]
        print(f"  --parallel 1 / --parallel 2 = {ratio:.2f}x")


if __name__ == "__main__":
    main()
