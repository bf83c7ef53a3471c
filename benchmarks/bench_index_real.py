"""`cuship index` of real CUDA wheels against its floor: how much of a cold index is ours.

    python3 benchmarks/bench_index_real.py [--wheels DIR] [--runs 5] [--json FILE] [--profile FILE]

The wheels are bench_judge's seven (xformers, bitsandbytes, cupy-cuda12x, cupy-cuda13x,
torchvision, torchao, faiss-gpu-cu12: about 300 MB for this Python), downloaded once with
``pip download --no-deps`` from PyPI into ``$XDG_CACHE_HOME/cuship/bench-real-wheels/cpXY``
(``~/.cache``) unless ``--wheels`` names a folder of wheels.

Timed, in pairs whose order swaps every run (medians reported; wall clock, and CPU seconds,
which a busy machine disturbs less), each a whole process:

* cuship: ``python -m cuship index WHEELS -o SITE`` into a new directory, no scan cache (a
  cold run: every wheel read, hashed, described), its bytecode and data-file caches made first
  (as an installed package has them). Its CPU is the child's user + system time.
* floor: the index's floor (benchmarks/_floor.py, the one definition every index bench uses):
  every wheel read whole and hashed; inflated from those bytes, each once and hashed as it
  inflates (RECORD's check), exactly the members cuship reports on: METADATA, RECORD and each
  ELF shared object (not the bundled CUDA libraries it names unread); the site's tree (learnt
  from one cuship wrote) written and the wheels linked. Its start-up is in it, as cuship's is.

``--profile FILE``: also run the cold index once under cProfile in this process and print the
top functions by own time (FILE keeps the stats).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "benchmarks"))

_LOCAL = 30


def default_folder() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "cuship" / "bench-real-wheels" / f"cp{sys.version_info[0]}{sys.version_info[1]}"


def wheels_in(folder: Path | None) -> list[Path]:
    """The wheels to index: ``folder``'s, or bench_judge's list downloaded once into the cache."""
    if folder is not None:
        return sorted(folder.glob("*.whl"))
    from bench_judge import WHEELS, download

    cache = default_folder()
    found = sorted(cache.glob("*.whl"))
    if len(found) < len(WHEELS):
        cache.mkdir(parents=True, exist_ok=True)
        download(cache)
        found = sorted(cache.glob("*.whl"))
    return found


def cuship_cold(
    wheels: Sequence[Path], scratch: Path, run: int, *, keep: bool = False
) -> tuple[float, float]:
    """Wall and CPU seconds of one cold ``cuship index``."""
    site = scratch / f"site-{run}"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    command = [sys.executable, "-m", "cuship", "index", *map(str, wheels), "-o", str(site)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if not keep:
        shutil.rmtree(site)
    return wall, cpu


def floor_run(plan: Path, dest: Path) -> tuple[float, float]:
    """Wall and CPU seconds of the floor's process (benchmarks/_floor.py) writing at ``dest``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    argv = [sys.executable, str(REPO / "benchmarks" / "_floor.py"), str(plan), str(dest)]
    subprocess.run(argv, check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    shutil.rmtree(dest)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def floor_plan(wheels: Sequence[Path], scratch: Path) -> tuple[Path, int]:
    """The plan of the cold index's floor, learnt from a site cuship writes once; how many
    members it inflates."""
    sys.path.insert(0, str(REPO))
    from benchmarks import _floor

    cuship_cold(wheels, scratch, -1, keep=True)
    site = scratch / "site--1"
    plan = _floor.cold_plan(
        site, wheels, scratch / "floor", given=[str(w) for w in wheels], elf=True
    )
    shutil.rmtree(site)
    members = sum(len(found) for _path, found in plan["wheels"])
    return _floor.write_plan(plan, scratch / "floor.plan"), members


def profile(wheels: Sequence[Path], scratch: Path, out: Path) -> None:
    import cProfile
    import pstats

    from cuship.index import write

    profiler = cProfile.Profile()
    profiler.runcall(write, list(wheels), scratch / "site-profiled")
    profiler.dump_stats(str(out))
    pstats.Stats(str(out)).sort_stats("tottime").print_stats(20)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--wheels", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--profile", type=Path)
    args = parser.parse_args()
    wheels = wheels_in(args.wheels)
    if not wheels:
        parser.error("no wheels to index")
    # An installed cuship has its bytecode (and its data files' parse): made first
    sys.path.insert(0, str(REPO))
    from benchmarks.instr_gate import fixed_env, precompile

    precompile({**fixed_env(Path(tempfile.gettempdir())), "PATH": os.environ.get("PATH", "")})
    total = sum(path.stat().st_size for path in wheels)
    scratch = Path(tempfile.mkdtemp(prefix="bench-index-real-"))
    times: dict[str, list[tuple[float, float]]] = {"cuship": [], "floor": []}
    try:
        plan, members = floor_plan(wheels, scratch)  # and the page cache warm for everyone
        for run in range(args.runs):
            order = ["cuship", "floor"]
            for name in order if run % 2 == 0 else order[::-1]:
                if name == "cuship":
                    times[name].append(cuship_cold(wheels, scratch, run))
                else:
                    times[name].append(floor_run(plan, scratch / "floor"))
        if args.profile is not None:
            profile(wheels, scratch, args.profile)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    report(wheels, total, members, times, args.json)
    return 0


def report(
    wheels: Sequence[Path],
    total: int,
    members: int,
    times: dict[str, list[tuple[float, float]]],
    out: Path | None,
) -> None:
    wall = {name: statistics.median(w for w, _ in runs) for name, runs in times.items()}
    cpu = {name: statistics.median(c for _, c in runs) for name, runs in times.items()}
    pairs = [c[0] / f[0] for c, f in zip(times["cuship"], times["floor"], strict=True)]
    print(f"{len(wheels)} wheels, {total / 1e6:.0f} MB, {members} members inflated by the floor")
    print(f"{'':16}{'wall s':>8}{'CPU s':>8}{'x floor':>12}")
    for name, label in {"cuship": "cuship index", "floor": "floor"}.items():
        ratio = f"{wall[name] / wall['floor']:.2f}/{cpu[name] / cpu['floor']:.2f}"
        print(f"{label:16}{wall[name]:8.2f}{cpu[name]:8.2f}{ratio:>12}")
    print(f"cuship/floor pair by pair (wall): {', '.join(f'{r:.2f}' for r in pairs)}")
    print("(ratios: wall/CPU; medians of", len(times["cuship"]), "interleaved runs)")
    if out is not None:
        document = {
            "wheels": [path.name for path in wheels],
            "bytes": total,
            "runs": {name: [list(pair) for pair in runs] for name, runs in times.items()},
            "median_wall": wall,
            "median_cpu": cpu,
        }
        out.write_text(json.dumps(document, indent=2) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
