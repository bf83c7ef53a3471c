"""Start-up cost of cuship's commands against pip's and the interpreter's, and matrix expansion.

Run: python benchmarks/bench_startup.py [--runs N]

Each command is a fresh interpreter (this one, cuship's bytecode and data-file caches made
first, as an installed package has them), timed whole; the runs go round the commands in turn,
so that every command's run sits beside a ``pip --version`` run and each ratio is taken pair by
pair (the median of those ratios is printed: a shared machine's drift cancels out). The start-up
floor is ``python -c pass``: the interpreter with its site and .pth files, what every Python
command pays before its first import. ``cuship resolve`` runs against a ``file://`` index of ten
synthetic wheels for a fixed machine (CUSHIP_GPUS and friends: no probe of this host), so its
time is start-up, judgement and rendering, no network. The goal: every command at most 0.3x
``pip --version``. Then the in-process time to expand a 5x6x8x6 matrix with exclusions.
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
sys.path.insert(0, str(REPO))

from benchmarks._index_scale import plan_wheels, write_wheel  # noqa: E402
from benchmarks.instr_gate import MACHINE, precompile  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": str(REPO / "src"), **MACHINE}


def commands(site: Path) -> dict[str, list[str]]:
    py = [sys.executable]
    cuship = [*py, "-m", "cuship"]
    return {
        "python -c pass (start-up floor)": [*py, "-c", "pass"],
        "pip --version": [*py, "-m", "pip", "--version"],
        "cuship --help": [*cuship, "--help"],
        "cuship matrix examples/cuvecops": [*cuship, "matrix", str(REPO / "examples" / "cuvecops")],
        "cuship resolve (file:// index)": [
            *cuship,
            "resolve",
            "scale-pkg00000",
            "--index",
            f"file://{site}/simple",
        ],
        "cuship doctor torch": [*cuship, "doctor", "torch"],
        "cuship env": [*cuship, "env"],
    }


def small_site(folder: Path) -> Path:
    """A site of ten synthetic wheels (one project, four labels), written by cuship."""
    wheels = folder / "wheels"
    wheels.mkdir()
    for i, spec in enumerate(plan_wheels(10)):
        write_wheel(wheels, spec, bytes([i]) * 2048)
    site = folder / "site"
    argv = [sys.executable, "-m", "cuship", "index", str(wheels), "-o", str(site)]
    subprocess.run(argv, env=ENV, check=True, capture_output=True)
    return site


def wall(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, capture_output=True, check=True, env=ENV)
    return time.perf_counter() - start


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
    precompile({**ENV, "PYTHONDONTWRITEBYTECODE": "1"})
    with tempfile.TemporaryDirectory() as tmp:
        table = commands(small_site(Path(tmp)))
        for argv in table.values():  # each once, untimed: every cache warm
            wall(argv)
        times: dict[str, list[float]] = {name: [] for name in table}
        for run in range(args.runs):
            names = list(table) if run % 2 == 0 else list(table)[::-1]
            for name in names:
                times[name].append(wall(table[name]))
    pip = times["pip --version"]
    print(f"{'command':<36} {'median s':>9} {'÷ pip (pairs)':>14}")
    for name, samples in times.items():
        ratio = statistics.median(a / b for a, b in zip(samples, pip, strict=True))
        print(f"{name:<36} {statistics.median(samples):9.3f} {ratio:14.2f}")
    median, considered, jobs = expansion(args.runs)
    print(
        f"expand 5x6x8x6 ({considered} combinations -> {jobs} jobs): {median * 1000:.1f} ms (goal < 50 ms)"
    )


if __name__ == "__main__":
    main()
