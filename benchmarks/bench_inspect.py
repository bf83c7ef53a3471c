"""`cuship inspect` vs `cuobjdump --list-elf --list-ptx` on a ~100 MB CUDA shared object.

The .so is built here by nvcc (once, cached under .cuship/bench/): a 12 MB initialised
``__device__`` table plus a small kernel, SASS for eight arches (sm_80 ... sm_121) and zstd PTX
for compute_120; nvlink adds a device-link container, so the file holds 26 fatbin entries in
3 containers, 119 MB in all. Both tools must report the same SASS and PTX arch sets.

    python3 benchmarks/bench_inspect.py [--so PATH] [--repeat 7]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NVCC = Path("/usr/local/cuda/bin/nvcc")
CACHE = ROOT / ".cuship" / "bench"
SASS = "arch=compute_80,code=[sm_80,sm_86,sm_89,sm_90,sm_100,sm_103,sm_120,sm_121]"
PTX = "arch=compute_120,code=compute_120"
KERNEL = """
__global__ void axpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""
_LISTED = re.compile(r"^(ELF|PTX) file\s+\d+: .*\.sm_(\w+)\.(?:cubin|ptx)$", re.MULTILINE)


def cuobjdump() -> Path:
    import triton

    return Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"


def build_big_so() -> Path:
    target = CACHE / "big.so"
    if target.is_file():
        return target
    CACHE.mkdir(parents=True, exist_ok=True)
    rng = random.Random(2)
    count = 3 << 20  # 3 Mi words = 12 MiB of initialised device data per arch
    values = ",".join(str(rng.getrandbits(32)) for _ in range(count))
    (CACHE / "table.cu").write_text(
        f"__device__ unsigned int table[{count}] = {{{values}}};\n"
        "__global__ void touch(unsigned int* o, int i) { o[0] = table[i]; }\n"
    )
    (CACHE / "axpy.cu").write_text(KERNEL)
    command = [str(NVCC), "-shared", "-Xcompiler", "-fPIC", "--cudart", "shared"]
    command += ["-gencode", SASS, "-gencode", PTX, "-o", str(target)]
    command += [str(CACHE / "table.cu"), str(CACHE / "axpy.cu")]
    print("building:", " ".join(command), file=sys.stderr)
    start = time.perf_counter()
    subprocess.run(command, check=True)
    print(f"built {target} in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return target


def median_seconds(action: Callable[[], object], repeat: int) -> float:
    action()  # warm the page cache and imports
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def run_cuobjdump(so: Path) -> tuple[set[str], set[str]]:
    out = subprocess.run(
        [str(cuobjdump()), "--list-elf", "--list-ptx", str(so)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = _LISTED.findall(out)
    return {sm for k, sm in found if k == "ELF"}, {sm for k, sm in found if k == "PTX"}


def run_cuship_cli(so: Path) -> tuple[set[str], set[str]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [sys.executable, "-m", "cuship", "inspect", str(so), "--json"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout
    doc = json.loads(out)
    return set(doc["sass"]), set(doc["ptx"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--so", type=Path, default=None, help="inspect this .so instead")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    from cuship.wheel.audit import inspect_object

    so = args.so or build_big_so()
    size_mb = so.stat().st_size / 1e6
    expected = run_cuobjdump(so)
    report = inspect_object(so)
    assert run_cuship_cli(so) == expected, (run_cuship_cli(so), expected)
    assert (set(report.sass), set(report.ptx)) == expected, (report, expected)

    t_cuobjdump = median_seconds(lambda: run_cuobjdump(so), args.repeat)
    t_cli = median_seconds(lambda: run_cuship_cli(so), args.repeat)
    t_lib = median_seconds(lambda: inspect_object(so), args.repeat)
    t_python = median_seconds(
        lambda: subprocess.run([sys.executable, "-c", "pass"], check=True), args.repeat
    )
    print(
        f"file: {so} ({size_mb:.0f} MB, {report.entries} fatbin entries, "
        f"{report.containers} containers)"
    )
    sass, ptx = (sorted(found, key=int) for found in expected)
    print(f"arches (both tools agree): SASS {sass}  PTX {ptx}")
    print(f"median of {args.repeat}:")
    print(f"  cuobjdump --list-elf --list-ptx   {t_cuobjdump * 1e3:8.1f} ms")
    print(
        f"  cuship inspect --json (process)   {t_cli * 1e3:8.1f} ms"
        f"   ratio cuobjdump/cuship = {t_cuobjdump / t_cli:5.2f}x"
    )
    print(f"    of which bare `python -c pass`  {t_python * 1e3:8.1f} ms")
    print(
        f"  cuship.wheel.inspect_object (lib) {t_lib * 1e3:8.1f} ms"
        f"   ratio cuobjdump/library = {t_cuobjdump / t_lib:5.0f}x"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
