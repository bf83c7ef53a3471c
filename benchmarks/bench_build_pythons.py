"""Every Python this machine has: the jobs `cuship ship examples/cuvecops` builds here before
(``main``) and after (goal: every CUDA 13.x job for Python 3.10-3.13), and the matrix wall time
of the four local Python jobs vs one job (goal: <= 2x, sccache serving the other three).

Run: python benchmarks/bench_build_pythons.py [--before REF] [--no-before]

Each run has its own sccache server (its own port) with an empty cache directory, so every run
starts cold and no other build on the machine shares or disturbs it, and a fresh output
directory (the build venvs of the non-running Pythons are made inside the timed run). "before"
runs the code of REF (``git archive``) on the same example, "after" this checkout's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "cuvecops"
PYTHONS = ("3.10", "3.11", "3.12", "3.13")


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _sccache() -> str:
    found = shutil.which("sccache") or str(Path(sys.executable).parent / "sccache")
    return found


class Cold:
    """A private, empty sccache for one run; its hit/miss counts after it."""

    def __init__(self, root: Path, name: str, src: Path) -> None:
        self.env = {
            **os.environ,
            "PYTHONPATH": str(src),
            "SCCACHE_DIR": str(root / f"sccache-{name}"),
            "SCCACHE_SERVER_PORT": str(_port()),
        }

    def __enter__(self) -> Cold:
        subprocess.run([_sccache(), "--start-server"], env=self.env, capture_output=True)
        return self

    def stats(self) -> dict[str, int]:
        done = subprocess.run(
            [_sccache(), "--show-stats", "--stats-format=json"],
            env=self.env,
            capture_output=True,
            text=True,
        )
        stats = json.loads(done.stdout)["stats"]
        hits = sum(stats.get("cache_hits", {}).get("counts", {}).values())
        misses = sum(stats.get("cache_misses", {}).get("counts", {}).values())
        return {"hits": hits, "misses": misses}

    def __exit__(self, *exc: object) -> None:
        subprocess.run([_sccache(), "--stop-server"], env=self.env, capture_output=True)


def cuship(args: list[str], env: dict[str, str]) -> tuple[float, Any]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "cuship", *args, "--json"], env=env, capture_output=True, text=True
    )
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1) or not done.stdout.strip():
        raise SystemExit(f"cuship {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return seconds, json.loads(done.stdout)


def ship(root: Path, name: str, src: Path) -> dict[str, Any]:
    with Cold(root, name, src) as cold:
        seconds, report = cuship(["ship", str(EXAMPLE), "-o", str(root / name)], cold.env)
        stats = cold.stats()
    built = sorted(j["job"] for j in report["jobs"] if j["status"] == "built")
    return {
        "seconds": seconds,
        "jobs": len(report["jobs"]),
        "built": built,
        "stages": report["stages"],
        "sccache": stats,
    }


def build(root: Path, name: str, jobs: list[str]) -> dict[str, Any]:
    with Cold(root, name, REPO / "src") as cold:
        picks = [a for job in jobs for a in ("--job", job)]
        seconds, outcomes = cuship(
            ["build", str(EXAMPLE), *picks, "-o", str(root / name)], cold.env
        )
        stats = cold.stats()
    return {
        "seconds": seconds,
        "per_job": {o["job"]: round(o.get("seconds", 0.0), 1) for o in outcomes},
        "status": {o["job"]: o["status"] for o in outcomes},
        "sccache": stats,
    }


def checkout(ref: str, root: Path) -> Path:
    archive = root / "before.tar"
    subprocess.run(["git", "-C", str(REPO), "archive", "-o", str(archive), ref], check=True)
    dest = root / "before"
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    return dest / "src"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", default="main", help="git ref of the 'before' code")
    parser.add_argument("--no-before", action="store_true")
    args = parser.parse_args()
    job = "cuvecops-0.1.0-cp{}-cu130"
    with tempfile.TemporaryDirectory(prefix="bench-pythons-") as tmp:
        root = Path(tmp)
        before = None if args.no_before else ship(root, "before", checkout(args.before, root))
        after = ship(root, "after", REPO / "src")
        one = build(root, "one", [job.format("311")])
        four = build(root, "four", [job.format(p.replace(".", "")) for p in PYTHONS])
    wanted = [job.format(p.replace(".", "")) for p in PYTHONS]
    print("cuvecops: cuship ship on this machine (2 cores), cold sccache each run")
    for name, run in (("before", before), ("after", after)):
        if run is None:
            continue
        print(
            f"  {name:<7} {len(run['built']):>2} of {run['jobs']} jobs built in {run['seconds']:.1f} s "
            f"(stages {run['stages']}; sccache {run['sccache']}): {', '.join(run['built'])}"
        )
    missing = sorted(set(wanted) - set(after["built"]))
    print(
        f"  every 13.x job for 3.10-3.13 built: {'yes' if not missing else 'no, missing ' + ', '.join(missing)}"
    )
    ratio = four["seconds"] / one["seconds"]
    print("cuship build, CUDA 13.0 jobs, cold sccache, fresh output (build venvs made in the run):")
    print(
        f"  one job (3.11)          {one['seconds']:6.1f} s  {one['per_job']}  sccache {one['sccache']}"
    )
    print(
        f"  four jobs (3.10-3.13)   {four['seconds']:6.1f} s  {four['per_job']}  sccache {four['sccache']}"
    )
    print(f"  four / one = {ratio:.2f}x (goal <= 2x)")


if __name__ == "__main__":
    main()
