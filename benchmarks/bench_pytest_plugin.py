"""Overhead of cuship's pytest plugin on collection, against plain pytest.

Run: python benchmarks/bench_pytest_plugin.py [--runs N] [--tests N]

Writes a project of N tests (default 5,000; half gpu-marked: bare, min_cc, memory, count, a card
shorthand) and times ``pytest --collect-only -q`` in fresh interpreters, alternating plain pytest
(``-p no:cuship``; the markers registered in pytest.ini so it warns about nothing) with the plugin
on this machine and on a fake 8×H100 machine (``CUSHIP_GPUS``), with bytecode caches on as on a
user's machine. Prints wall and CPU medians, the CPU minimum and each one's ratio to plain
pytest (goal < 1.05x), the time of one fingerprint, and whether computing it imports torch.

On a shared machine the wall and CPU times of a pytest run wander by ±20% from run to run, much
of it in the cyclic garbage collector (which takes about half of a 5,000-test collection); use
many runs (``--runs 21``) and read the ratios together.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENV = {
    k: v
    for k, v in os.environ.items()
    if not k.startswith(("CUSHIP_", "PYTEST_", "CUDA_VISIBLE", "PYTHONDONTWRITEBYTECODE"))
}
ENV["PYTHONPATH"] = str(REPO / "src")
PER_FILE = 100
MARKERS = (
    "@pytest.mark.gpu",
    '@pytest.mark.gpu(min_cc="8.0")',
    '@pytest.mark.gpu(memory="40GiB")',
    "@pytest.mark.gpu(count=2)",
    "@pytest.mark.h100",
)
INI = """[pytest]
markers =
    gpu: needs a GPU
    h100: needs an H100
"""


def write_project(root: Path, tests: int) -> None:
    (root / "pytest.ini").write_text(INI)
    for start in range(0, tests, PER_FILE):
        lines = ["import pytest", ""]
        for n in range(start, min(start + PER_FILE, tests)):
            if n % 2:
                lines.append(MARKERS[(n // 2) % len(MARKERS)])
            lines += [f"def test_{n}():", "    pass", ""]
        (root / f"test_m{start // PER_FILE:03d}.py").write_text("\n".join(lines))


def collect(root: Path, extra: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one ``pytest --collect-only -q`` in a fresh interpreter."""
    argv = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        argv + extra, cwd=root, env=env, capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"pytest failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def fingerprint_facts() -> str:
    code = (
        "import sys, time; t = time.perf_counter(); from cuship.machine import fingerprint; "
        "fp = fingerprint(); print(f'{(time.perf_counter() - t) * 1000:.0f}', "
        "'torch' in sys.modules, fp.torch.version if fp.torch else None)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=ENV, capture_output=True, text=True, check=True
    ).stdout.split()
    return f"fingerprint (import + probe): {out[0]} ms; torch {out[2]} seen, imported: {out[1]}"


def measure(root: Path, env: dict[str, str], runs: int) -> dict[str, list[tuple[float, float]]]:
    """(wall, CPU) seconds of each run per variant, interleaved so drift hits all alike."""
    variants = {
        "plain pytest (-p no:cuship)": (["-p", "no:cuship"], env),
        "cuship plugin, this machine": ([], env),
        "cuship plugin, CUSHIP_GPUS=8xH100": ([], env | {"CUSHIP_GPUS": ",".join(["H100"] * 8)}),
    }
    for extra, variant_env in variants.values():  # warm the file cache and .pyc files
        collect(root, extra, variant_env)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    for _ in range(runs):
        for name, (extra, variant_env) in variants.items():
            samples[name].append(collect(root, extra, variant_env))
    return samples


STATISTICS: dict[str, Callable[[list[tuple[float, float]]], float]] = {
    "wall median": lambda got: statistics.median(w for w, _ in got),
    "CPU median": lambda got: statistics.median(c for _, c in got),
    "CPU min": lambda got: min(c for _, c in got),
}


def table(samples: dict[str, list[tuple[float, float]]]) -> str:
    """Each statistic per variant, with its ratio to plain pytest."""
    plain = next(iter(samples.values()))
    lines = [f"{'variant':<36}" + "".join(f"{name:>20}" for name in STATISTICS)]
    for variant, got in samples.items():
        cells = []
        for pick in STATISTICS.values():
            value = pick(got)
            cells.append(f"{value:7.3f} s {value / pick(plain):6.3f}x")
        lines.append(f"{variant:<36}" + "".join(f"{cell:>20}" for cell in cells))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--tests", type=int, default=5000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        write_project(root, args.tests)
        # Bytecode caches on, as on a user's machine (kept out of the repository).
        env = ENV | {"PYTHONPYCACHEPREFIX": str(Path(tmp) / "pycache")}
        samples = measure(root, env, args.runs)
    print(f"pytest --collect-only -q on {args.tests} tests (half gpu-marked), {args.runs} runs")
    print(table(samples))
    print("goal: ratio < 1.05x (the machine is shared: the CPU columns are the steadier)")
    print(fingerprint_facts())


if __name__ == "__main__":
    main()
