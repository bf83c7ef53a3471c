"""`cuship doctor` over this environment (torch and every other installed distribution).

Run: python benchmarks/bench_doctor.py [--runs N]

Prints the median wall time of `cuship doctor` and `cuship doctor --json` in a fresh interpreter
(goal: under 1 s), beside `pip check` (what a user runs today, which reads only metadata); then,
in process, what the run is made of: distributions looked at, those with shared objects, shared
objects and their size, and the time of the scan with cuship's struct ELF reader
(`scan_object`) against reading the same objects with pyelftools (the tests' oracle reader).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(REPO / "src")}


def wall(argv: list[str], runs: int, ok: tuple[int, ...] = (0,)) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, env=ENV, check=False)
        times.append(time.perf_counter() - start)
        if done.returncode not in ok:
            raise SystemExit(f"{argv} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    return statistics.median(times)


def objects() -> list[Path]:
    from cuship.doctor import scan

    found = scan()
    return [
        Path(package.location) / obj.path for package in found.packages for obj in package.objects
    ]


def reader_times(paths: list[Path], runs: int) -> tuple[float, float]:
    from tests.elf_oracle import elf_facts

    from cuship.wheel.audit import scan_object
    from cuship.wheel.read.fatbin import FATBIN_SECTIONS

    def pyelftools(path: Path) -> None:
        with path.open("rb") as handle:
            elf_facts(handle, source=str(path), wanted=FATBIN_SECTIONS)

    def timed(read: object) -> float:
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            for path in paths:
                read(path)  # type: ignore[operator]
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    return timed(scan_object), timed(pyelftools)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    sys.path[:0] = [str(REPO / "src"), str(REPO)]  # REPO: the tests' pyelftools reader
    from cuship.doctor import diagnose

    py = sys.executable
    # exit 1 is a finding (a problem here), not a failure of the benchmark
    doctor = wall([py, "-m", "cuship", "doctor"], args.runs, ok=(0, 1))
    as_json = wall([py, "-m", "cuship", "doctor", "--json"], args.runs, ok=(0, 1))
    pip_check = wall([py, "-m", "pip", "check"], args.runs, ok=(0, 1))
    print(f"{'command (fresh interpreter)':<36} {'median s':>9}")
    for name, seconds in (
        ("cuship doctor", doctor),
        ("cuship doctor --json", as_json),
        ("pip check", pip_check),
    ):
        print(f"{name:<36} {seconds:>9.3f}")

    report = diagnose()
    paths = objects()
    size = sum(p.stat().st_size for p in paths)
    quick, pyelftools = reader_times(paths, max(1, args.runs // 3))
    torch = next((p for p in report.packages if p.name == "torch"), None)
    print(
        f"\nin process: diagnose() {report.seconds:.3f} s over {report.scanned} distributions, "
        f"{len(report.packages)} with shared objects ({len(paths)} objects, "
        f"{size / 2**30:.2f} GiB; torch {torch.version if torch else 'absent'}), "
        f"{len(report.problems)} problem(s)"
    )
    print(
        f"reading those objects: struct reader {quick:.3f} s, pyelftools {pyelftools:.3f} s "
        f"({pyelftools / quick:.0f}x)"
    )
    print(f"goal: cuship doctor < 1 s: {'met' if doctor < 1.0 else 'NOT met'}")


if __name__ == "__main__":
    main()
