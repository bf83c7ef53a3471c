"""`cuship index` of real CUDA wheels against its floor: how much of a cold index is ours.

    python3 benchmarks/bench_index_real.py [--wheels DIR] [--runs 5] [--json FILE] [--profile FILE]

The wheels are bench_judge's seven (xformers, bitsandbytes, cupy-cuda12x, cupy-cuda13x,
torchvision, torchao, faiss-gpu-cu12: about 300 MB for this Python), downloaded once with
``pip download --no-deps`` from PyPI into ``$XDG_CACHE_HOME/cuship/bench-real-wheels/cpXY``
(``~/.cache``) unless ``--wheels`` names a folder of wheels.

Timed, in pairs whose order swaps every run (medians reported; wall clock, and CPU seconds,
which a busy machine disturbs less):

* cuship: ``python -m cuship index WHEELS -o SITE`` into a new directory, no scan cache (a
  cold run: every wheel read, hashed, described), its bytecode compiled first (as an installed
  package has it). Its CPU is the child's user + system time; start-up is in it.
* floor: in this process, what any indexer that says what :mod:`cuship` says must do: the
  sha256 of every file (read whole) and inflating (zlib, from those bytes) exactly the members
  cuship inspects: METADATA, RECORD and each ELF shared object it reads (not the bundled CUDA
  libraries it names without inflating).
* floor + RECORD: the floor, and the sha256 of each inflated member besides (what holding
  the inflated members to RECORD's hashes costs on top; issue 34).

``--profile FILE``: also run the cold index once under cProfile in this process and print the
top functions by own time (FILE keeps the stats).
"""

from __future__ import annotations

import argparse
import compileall
import hashlib
import json
import os
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable, Sequence
from functools import partial
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


# (header offset, compressed size, method) of each member the floor inflates, by wheel
Plan = dict[Path, list[tuple[int, int, int]]]


def inspected(path: Path) -> list[tuple[int, int, int]]:
    """The members of ``path`` cuship inflates: METADATA, RECORD, and each ELF shared object
    that is not a bundled CUDA library (cuship's own predicates decide)."""
    from cuship.wheel.cudalibs import is_cuda_lib
    from cuship.wheel.read.zipmeta import looks_shared

    members = []
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            name = info.filename
            top = name.count("/") == 1 and name.endswith(
                (".dist-info/METADATA", ".dist-info/RECORD")
            )
            elf = (
                looks_shared(name)
                and not is_cuda_lib(name)
                and archive.read(info)[:4] == b"\x7fELF"
            )
            if top or elf:
                members.append((info.header_offset, info.compress_size, info.compress_type))
    return members


def floor(plan: Plan, *, record: bool) -> None:
    """sha256 of each file, and its inspected members inflated (and hashed, with ``record``)."""
    for path, members in plan.items():
        data = path.read_bytes()
        hashlib.sha256(data).digest()
        view = memoryview(data)
        for offset, compressed, method in members:
            name_len, extra_len = struct.unpack_from("<HH", data, offset + 26)
            start = offset + _LOCAL + name_len + extra_len
            raw = view[start : start + compressed]
            out = zlib.decompressobj(-15).decompress(raw) if method else bytes(raw)
            if record:
                hashlib.sha256(out).digest()


def cuship_cold(wheels: Sequence[Path], scratch: Path, run: int) -> tuple[float, float]:
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
    shutil.rmtree(site)
    return wall, cpu


def timed(fn: Callable[[], None]) -> tuple[float, float]:
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - start, time.process_time() - cpu


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
    # An installed cuship has its bytecode; a checkout run with PYTHONDONTWRITEBYTECODE set
    # would compile every module on each run (a quarter of a second of "ours" that is not)
    compileall.compile_dir(REPO / "src" / "cuship", quiet=1)
    plan = {path: inspected(path) for path in wheels}
    total = sum(path.stat().st_size for path in wheels)
    scratch = Path(tempfile.mkdtemp(prefix="bench-index-real-"))
    times: dict[str, list[tuple[float, float]]] = {"cuship": [], "floor": [], "record": []}
    try:
        floor(plan, record=False)  # the page cache warm for everyone
        for run in range(args.runs):
            order = ["cuship", "floor", "record"]
            for name in order if run % 2 == 0 else order[::-1]:
                if name == "cuship":
                    times[name].append(cuship_cold(wheels, scratch, run))
                else:
                    times[name].append(timed(partial(floor, plan, record=name == "record")))
        if args.profile is not None:
            profile(wheels, scratch, args.profile)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    report(wheels, total, plan, times, args.json)
    return 0


def report(
    wheels: Sequence[Path],
    total: int,
    plan: Plan,
    times: dict[str, list[tuple[float, float]]],
    out: Path | None,
) -> None:
    wall = {name: statistics.median(w for w, _ in runs) for name, runs in times.items()}
    cpu = {name: statistics.median(c for _, c in runs) for name, runs in times.items()}
    members = sum(len(found) for found in plan.values())
    print(f"{len(wheels)} wheels, {total / 1e6:.0f} MB, {members} members inflated by the floor")
    print(f"{'':16}{'wall s':>8}{'CPU s':>8}{'x floor':>10}{'x floor+RECORD':>16}")
    labels = {"cuship": "cuship index", "floor": "floor", "record": "floor + RECORD"}
    for name, label in labels.items():
        ratio = f"{wall[name] / wall['floor']:.2f}/{cpu[name] / cpu['floor']:.2f}"
        ratio_record = f"{wall[name] / wall['record']:.2f}/{cpu[name] / cpu['record']:.2f}"
        print(f"{label:16}{wall[name]:8.2f}{cpu[name]:8.2f}{ratio:>10}{ratio_record:>16}")
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
