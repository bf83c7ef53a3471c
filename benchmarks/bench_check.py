"""How long `cuship check --quick` takes on the example, and what its harness costs.

Side by side, in one run:
  * `cuship check examples/cuvecops --quick --device cpu` with --parallel 1 and --parallel 2
    (wall clock, including interpreter start-up; goal < 60 s; speed-up goal >= 1.7x);
  * what a user would otherwise run: pytest on the example's own CPU-runnable kernel tests
    (Triton interpreter, Numba simulator, NumPy), which check fewer cases with fixed inputs;
  * the per-case harness overhead (round trip minus the kernel's own time) per engine,
    from the JSON report (goal < 5 % of the kernel's time).

Usage: python benchmarks/bench_check.py [--repeat N]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "cuvecops"
PYTEST_FILES = [
    "tests/test_cpu.py",
    "tests/test_triton.py",
    "tests/test_numba.py",
    "tests/test_broken.py",
]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO / "src"), "GITHUB_ACTIONS": "false"}


def run_check(parallel: int) -> tuple[float, dict[str, Any]]:
    argv = [sys.executable, "-m", "cuship", "check", str(EXAMPLE), "--quick", "--device", "cpu"]
    argv += ["--no-store", "--format", "json", "--parallel", str(parallel)]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=_env(), check=False)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"cuship check exited {done.returncode}:\n{done.stderr}")
    report: dict[str, Any] = json.loads(done.stdout)
    return took, report


def run_pytest() -> tuple[float, int]:
    env = {**_env(), "PYTHONPATH": str(EXAMPLE / "src")}
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *PYTEST_FILES]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=EXAMPLE, check=False)
    took = time.perf_counter() - started
    words = done.stdout.strip().splitlines()[-1].split() if done.stdout.strip() else []
    passed = next((int(w) for w, n in itertools.pairwise(words) if n.startswith("passed")), 0)
    return took, passed


def overhead(report: dict[str, Any]) -> dict[str, tuple[float, float, int]]:
    """Per engine: (harness seconds per case, harness share of kernel time, cases)."""
    sums: dict[str, list[float]] = {}
    for group in report["groups"]:
        for case in group["cases"][1:]:  # the first case of a group pays one-off kernel imports
            wall, kernel = case["wall_s"], case["kernel_s"]
            acc = sums.setdefault(group["engine"], [0.0, 0.0, 0.0])
            acc[0] += wall - kernel
            acc[1] += kernel
            acc[2] += 1
    return {e: (h / n, h / k if k else float("inf"), int(n)) for e, (h, k, n) in sums.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(
        f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start "
        "(shared with other jobs: absolute times are noisy)"
    )
    one, two, py = [], [], []
    report: dict[str, Any] = {}
    for _ in range(args.repeat):
        took, report = run_check(1)
        one.append(took)
        two.append(run_check(2)[0])
        py_took, py_passed = run_pytest()
        py.append(py_took)
    cases = sum(len(g["cases"]) for g in report["groups"])
    groups = sum(1 for g in report["groups"] if g["cases"])
    m1, m2, mp = statistics.median(one), statistics.median(two), statistics.median(py)
    print(f"\ncuship check --quick (median of {args.repeat}, wall incl. start-up):")
    print(
        f"  --parallel 1: {m1:6.2f} s   ({groups} groups, {cases} cases)   runs: {', '.join(f'{t:.2f}' for t in one)}"
    )
    print(
        f"  --parallel 2: {m2:6.2f} s   speed-up vs --parallel 1: {m1 / m2:.2f}x   runs: {', '.join(f'{t:.2f}' for t in two)}"
    )
    print(
        f"  pytest on the example's CPU kernel tests: {mp:6.2f} s ({py_passed} tests)   "
        f"cuship --parallel 1 / pytest: {m1 / mp:.2f}x"
    )
    print("\nper-case harness overhead (round trip - kernel time), last --parallel 1 run:")
    for engine, (per_case, share, n) in sorted(overhead(report).items()):
        print(
            f"  {engine:<17} {per_case * 1e6:8.0f} us/case  = {share * 100:7.1f} % of kernel time  ({n} cases)"
        )
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
