"""How long `cuship check` takes, serial and on two workers, and what its harness costs.

Side by side, in one run, repetitions interleaved (1, 2, 2, 1, ...) so that a shared machine's
drifting load falls on both alike; medians and the ratio, next to the ceiling (what two
processes of a plain CPU-bound loop gain over one on this machine between the runs):
  * `cuship check examples/cuvecops --quick --device cpu` with --parallel 1 and --parallel 2
    (wall clock, including interpreter start-up; goal < 60 s; speed-up goal >= 1.5x);
  * the same on a seven-op Triton suite (tests/fixtures/idioms: RMSNorm, LayerNorm, SwiGLU,
    GeGLU, RMSNorm backward, RoPE, cross-entropy on the interpreter), quick and thorough;
  * with --thorough, the example's thorough check too (minutes);
  * with --src DIR, the same runs of another checkout's src (e.g. main's) for a before/after;
  * what a user would otherwise run: pytest on the example's own CPU-runnable kernel tests
    (Triton interpreter, Numba simulator, NumPy), which check fewer cases with fixed inputs;
  * the per-case harness overhead (round trip minus the kernel's own time) per engine,
    from the JSON report (goal < 5 % of the kernel's time).

Usage: python benchmarks/bench_check.py [--repeat N] [--thorough] [--src DIR] [--no-pytest]
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
IDIOMS = REPO / "tests" / "fixtures" / "idioms"
SRC = [REPO / "src"]
PYTEST_FILES = [
    "tests/test_cpu.py",
    "tests/test_triton.py",
    "tests/test_numba.py",
    "tests/test_broken.py",
]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS")}
    return {**env, "PYTHONPATH": str(SRC[0])}


def run_check(
    parallel: int, project: Path = EXAMPLE, *, quick: bool = True
) -> tuple[float, dict[str, Any]]:
    argv = [sys.executable, "-m", "cuship", "check", str(project), "--device", "cpu"]
    argv += ["--quick"] if quick else []
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


_SPIN = "import time\nx = 0\nfor i in range(6_000_000):\n    x += i\n"


def capacity() -> float:
    """The speed-up two processes can get here now: the same CPU-bound loop in one process,
    then in two at once (2.0 on two idle cores; a shared machine gives less)."""

    def wall(n: int) -> float:
        started = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-c", _SPIN]) for _ in range(n)]
        for proc in procs:
            proc.wait()
        return time.perf_counter() - started

    one, two = (
        statistics.median(wall(1) for _ in range(3)),
        statistics.median(wall(2) for _ in range(3)),
    )
    return 2 * one / two


def _runs(times: list[float]) -> str:
    return ", ".join(f"{t:.2f}" for t in times)


def compare(name: str, project: Path, *, quick: bool, repeat: int) -> dict[str, Any]:
    """--parallel 1 against --parallel 2, interleaved; the last serial run's report."""
    times: dict[int, list[float]] = {1: [], 2: []}
    report: dict[str, Any] = {}
    room = [capacity()]
    for rep in range(repeat):
        for parallel in (1, 2) if rep % 2 == 0 else (2, 1):
            took, done = run_check(parallel, project, quick=quick)
            times[parallel].append(took)
            report = done if parallel == 1 else report
        room.append(capacity())
    one, two = statistics.median(times[1]), statistics.median(times[2])
    cases = sum(len(g["cases"]) for g in report["groups"])
    print(f"\n{name} (median of {repeat}, wall incl. start-up; {cases} cases):")
    print(f"  --parallel 1: {one:6.2f} s   runs: {_runs(times[1])}")
    print(f"  --parallel 2: {two:6.2f} s   runs: {_runs(times[2])}   speed-up: {one / two:.2f}x")
    print(
        f"  two processes' speed-up on this machine meanwhile (the ceiling): "
        f"{statistics.median(room):.2f}x   ({_runs(room).replace(', ', 'x, ')}x)"
    )
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--thorough", action="store_true", help="also the example's thorough run")
    parser.add_argument("--src", type=Path, help="run another checkout's src (e.g. main's)")
    parser.add_argument("--no-pytest", action="store_true")
    args = parser.parse_args()
    if args.src is not None:
        SRC[0] = args.src.resolve()
    print(
        f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start "
        f"(shared with other jobs: absolute times are noisy); cuship from {SRC[0]}"
    )
    report = compare("cuvecops --quick", EXAMPLE, quick=True, repeat=args.repeat)
    compare("7 Triton ops (idioms) --quick", IDIOMS, quick=True, repeat=args.repeat)
    compare("7 Triton ops (idioms), thorough", IDIOMS, quick=False, repeat=args.repeat)
    if args.thorough:
        compare("cuvecops, thorough", EXAMPLE, quick=False, repeat=args.repeat)
    if not args.no_pytest:
        py = [run_pytest() for _ in range(args.repeat)]
        mp = statistics.median(t for t, _ in py)
        print(f"\npytest on the example's CPU kernel tests: {mp:6.2f} s ({py[-1][1]} tests)")
    print("\nper-case harness overhead (round trip - kernel time), last cuvecops --parallel 1 run:")
    for engine, (per_case, share, n) in sorted(overhead(report).items()):
        print(
            f"  {engine:<17} {per_case * 1e6:8.0f} us/case  = {share * 100:7.1f} % of kernel time  ({n} cases)"
        )
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
