"""Start-up cost of cuship against pip, and matrix expansion time.

Run: python benchmarks/bench_startup.py [--runs N]

Prints median wall time of `cuship --help`, `cuship matrix examples/cuvecops` and `pip --version`
(each a fresh interpreter), their ratios, and the in-process time to expand a 5×6×8×6 matrix with
exclusions.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(REPO / "src")}


def wall(argv: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=True, env=ENV)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


BIG = """\
[project]
name = "big"
version = "1.0"
[matrix]
python = ["3.9", "3.10", "3.11", "3.12", "3.13"]
cuda = ["11.8", "12.4", "12.6", "12.8", "12.9", "13.0"]
torch = ["2.4", "2.5", "2.6", "2.7", "2.8", "2.9", "2.10", "2.11"]
arch = ["8.0", "8.6", "9.0", "10.0", "12.0", "8.0;9.0;12.0+PTX"]
exclude = [{cuda = "11.8", arch = "12.0"}, {torch = "2.4", python = "3.13"}, {cuda = "12.4", torch = "2.9"}]
"""


def expansion(runs: int) -> tuple[float, int, int]:
    sys.path.insert(0, str(REPO / "src"))
    from cuship.compat import load
    from cuship.config import load_config
    from cuship.matrix import expand

    compat = load()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cuship.toml"
        path.write_text(BIG)
        config = load_config(path)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            matrix = expand(config, compat)
            times.append(time.perf_counter() - start)
    return statistics.median(times), matrix.considered, len(matrix.jobs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    py = sys.executable
    example = str(REPO / "examples" / "cuvecops")
    pip = wall([py, "-m", "pip", "--version"], args.runs)
    help_ = wall([py, "-m", "cuship", "--help"], args.runs)
    matrix = wall([py, "-m", "cuship", "matrix", example], args.runs)
    print(f"{'command':<40} {'median s':>9} {'÷ pip':>7}")
    for name, t in (
        ("pip --version", pip),
        ("cuship --help", help_),
        ("cuship matrix examples/cuvecops", matrix),
    ):
        print(f"{name:<40} {t:9.3f} {t / pip:7.2f}")
    median, considered, jobs = expansion(args.runs)
    print(
        f"expand 5x6x8x6 ({considered} combinations -> {jobs} jobs): {median * 1000:.1f} ms (goal < 50 ms)"
    )


if __name__ == "__main__":
    main()
