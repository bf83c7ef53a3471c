"""Test-suite wall time of this checkout against an earlier commit, interleaved in one run.

Run: python benchmarks/bench_suite.py [--against REF] [--runs N] [--full]

Makes a temporary git worktree of REF (default: the first parent of HEAD), then alternates
``pytest tests/unit`` (``--full``: the whole suite with ``-n 2``) between REF and this checkout,
each in a fresh interpreter with its own ``src`` first on the path, and prints the medians, their
ratio and the test counts. Alternating keeps a busy machine's drift out of the ratio.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_suite(root: Path, full: bool) -> tuple[float, int]:
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    argv += ["-n", "2"] if full else ["tests/unit"]
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    passed = re.search(r"(\d+) passed", done.stdout)
    if done.returncode != 0 or passed is None:
        tail = "\n".join(done.stdout.splitlines()[-5:])
        raise SystemExit(f"the suite failed in {root} (exit {done.returncode}):\n{tail}")
    return seconds, int(passed.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default="HEAD~1", help="the commit to compare with")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--full", action="store_true", help="the whole suite, -n 2")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cuship-suite-") as tmp:
        other = Path(tmp) / "ref"
        subprocess.run(
            ["git", "worktree", "add", "--detach", "-q", str(other), args.against],
            cwd=REPO,
            check=True,
        )
        try:
            times: dict[str, list[float]] = {"ref": [], "head": []}
            counts: dict[str, int] = {}
            for _ in range(args.runs):
                for key, root in (("ref", other), ("head", REPO)):
                    seconds, passed = run_suite(root, args.full)
                    times[key].append(seconds)
                    counts[key] = passed
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=REPO)
    what = "full suite (-n 2)" if args.full else "unit suite"
    ref, head = statistics.median(times["ref"]), statistics.median(times["head"])
    print(f"{what}, median of {args.runs}, load average {os.getloadavg()[0]:.1f}")
    print(f"{'checkout':<26}{'tests':>7}{'median s':>10}{'per test ms':>13}")
    for key, label in (("ref", args.against), ("head", "HEAD (this checkout)")):
        median = statistics.median(times[key])
        per_test = 1000 * median / counts[key]
        print(f"{label:<26}{counts[key]:>7}{median:>10.1f}{per_test:>13.1f}")
    print(f"HEAD / {args.against}: {head / ref:.2f}x wall")


if __name__ == "__main__":
    main()
