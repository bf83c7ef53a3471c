"""How good cuship bench's numbers are on a CPU, side by side with pytest-benchmark.

In one run, on a fixed workload (``np.add`` of two float32 arrays into a preallocated output):

  (a) run-to-run spread of the reported median (stdev / median across R runs), cuship's wall
      timer with adaptive stopping vs pytest-benchmark, at an equal time budget per run;
  (b) gate quality over N trials: a planted 10 % slowdown (arrays 10 % longer) must come out
      SLOWER (goal >= 95 %), identical code must not (goal <= 5 % false alarms), measured
      sequentially (baseline run, then current run) and interleaved A/B.

The machine's load matters: run it on a quiet machine for numbers to publish, and say what else
ran. Usage: python benchmarks/bench_bench.py [--quick] [--runs R] [--trials N] [--budget S]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from cuship.bench.stats import compare  # noqa: E402
from cuship.bench.timers.measure import StopRule, WallTimer, measure, measure_interleaved  # noqa: E402

N = 1 << 17
THRESHOLD = 0.05


def workload(n: int) -> Callable[[], object]:
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = np.empty_like(x)
    return lambda: np.add(x, y, out=out)


def cuship_median(call: Callable[[], object], budget: float) -> tuple[float, list[float]]:
    # The same budget for everyone: sample for `budget` seconds (noise target 0 never stops early).
    rule = StopRule(noise=0.0, min_samples=10, min_time=budget, timeout=budget)
    m = measure(WallTimer(), call, rule)
    return statistics.median(m.samples), list(m.samples)


_PYTEST_FILE = """
    import numpy as np
    import pytest

    N = {n}

    @pytest.mark.parametrize("run", range({runs}))
    def test_add(benchmark, run):
        rng = np.random.default_rng(0)
        x = rng.standard_normal(N, dtype=np.float32)
        y = rng.standard_normal(N, dtype=np.float32)
        out = np.empty_like(x)
        benchmark(np.add, x, y, out=out)
"""


def pytest_benchmark_medians(runs: int, budget: float) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        test = Path(tmp) / "test_add.py"
        test.write_text(textwrap.dedent(_PYTEST_FILE.format(n=N, runs=runs)))
        report = Path(tmp) / "out.json"
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)]
        cmd += [f"--benchmark-max-time={budget}", f"--benchmark-json={report}", "-W", "ignore"]
        cmd += ["--benchmark-disable-gc", "--rootdir", tmp, "-c", os.devnull]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=tmp)
        if proc.returncode != 0:
            raise SystemExit(f"pytest-benchmark failed:\n{proc.stdout[-2000:]}\n{proc.stderr}")
        doc = json.loads(report.read_text())
    return [b["stats"]["median"] for b in doc["benchmarks"]]


def spread(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.median(values)


def part_a(runs: int, budget: float) -> None:
    call = workload(N)
    ours = [cuship_median(call, budget)[0] for _ in range(runs)]
    theirs = pytest_benchmark_medians(runs, budget)
    print(f"(a) run-to-run spread of the median, {runs} runs x {budget:g} s, np.add n={N}")
    print(f"    cuship bench      median {statistics.median(ours) * 1e6:8.2f} us  "
          f"spread {spread(ours) * 100:6.2f} %")  # fmt: skip
    print(f"    pytest-benchmark  median {statistics.median(theirs) * 1e6:8.2f} us  "
          f"spread {spread(theirs) * 100:6.2f} %")  # fmt: skip
    print(f"    ratio (pytest-benchmark / cuship spread): {spread(theirs) / spread(ours):.2f}x")


def _rates(verdicts: list[str]) -> str:
    return ", ".join(f"{v} {verdicts.count(v)}" for v in ("SLOWER", "SAME", "UNSURE", "FASTER"))


def part_b(trials: int, budget: float) -> None:
    base, same, slow = workload(N), workload(N), workload(int(N * 1.1))
    seq_slow, seq_same, ab_slow, ab_same = [], [], [], []
    rule = StopRule(noise=0.0, min_samples=10, min_time=budget, timeout=budget)
    for _ in range(trials):
        reference = cuship_median(base, budget)[1]
        seq_slow.append(compare(cuship_median(slow, budget)[1], reference, THRESHOLD).verdict)
        seq_same.append(compare(cuship_median(same, budget)[1], reference, THRESHOLD).verdict)
        a, b = measure_interleaved(WallTimer(), slow, base, rule)
        ab_slow.append(compare(a.samples, b.samples, THRESHOLD).verdict)
        a, b = measure_interleaved(WallTimer(), same, base, rule)
        ab_same.append(compare(a.samples, b.samples, THRESHOLD).verdict)
    print(f"(b) gate over {trials} trials, threshold {THRESHOLD:.0%}, {budget:g} s per side")
    for name, planted, identical in (
        ("sequential ", seq_slow, seq_same),
        ("interleaved", ab_slow, ab_same),
    ):
        detect = planted.count("SLOWER") / trials
        false = identical.count("SLOWER") / trials
        print(f"    {name}: 10 % slowdown detected {detect:6.1%} ({_rates(planted)})")
        print(f"    {name}: false alarms         {false:6.1%} ({_rates(identical)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs, shorter budget")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--budget", type=float, default=None)
    args = parser.parse_args()
    runs = args.runs or (5 if args.quick else 10)
    budget = args.budget or (0.2 if args.quick else 0.5)
    print(f"load average at start: {os.getloadavg()}, cores: {os.cpu_count()}")
    part_a(runs, budget)
    part_b(args.trials, budget)
    print(f"load average at end:   {os.getloadavg()}")


if __name__ == "__main__":
    main()
