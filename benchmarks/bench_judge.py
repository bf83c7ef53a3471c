"""The judge on real CUDA wheels from PyPI, on faked machines, against an oracle built from
NVIDIA's and binutils' own tools; and `inspect` against those tools on the same objects.

Run: python benchmarks/bench_judge.py [--wheels DIR] [--json OUT] [--cuobjdump PATH]

Wheels (for this Python, downloaded from PyPI when ``--wheels`` is not given): xformers 0.0.35,
bitsandbytes 0.50.2, cupy-cuda12x and cupy-cuda13x 14.2.0, torchvision 0.28.0, torchao 0.18.0,
faiss-gpu-cu12 1.14.1.post1. They are indexed with ``cuship index``; for every machine below,
``cuship resolve`` (in process: the resolver over the index's pages and manifests, with the
machine given by CUSHIP_* variables) chooses or rejects each project.

The oracle answers "do this package's CUDA kernels run on that machine" from facts read with
``cuobjdump --list-elf --list-ptx`` (the device code the runtime loads), ``readelf -d`` (the
libraries each object needs) and ``nm -D --undefined-only`` (what it imports from torch), with
rules written here, apart from cuship's: the objects that carry each package's kernels (which
of bitsandbytes' libraries it loads for torch's CUDA; torchao's two arch-specific objects, of
which one running is enough), a library must be bundled or on the machine (torch's CUDA build
brings its major's runtime), an object linking libc10_cuda needs a CUDA torch of its runtime's
major, exact torch ABI the same torch minor, the driver's CUDA major at least the runtime's, and
SASS of the GPU's major with a minor not above it, or PTX not above the GPU.

Prints the table (cuship's verdict, the oracle's, agreement) and the timing of cuship's reader
against cuobjdump + nm + readelf over every shared object of the wheels.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

WHEELS = (
    "xformers==0.0.35",
    "bitsandbytes==0.50.2",
    "cupy-cuda12x==14.2.0",
    "cupy-cuda13x==14.2.0",
    "torchvision==0.28.0",
    "torchao==0.18.0",
    "faiss-gpu-cu12==1.14.1.post1",
)
PYPI = "https://pypi.org/simple/"

# The libraries of a CUDA major that a machine offers (its toolkit, or a CUDA torch's wheels).
CU12 = {
    "libcudart.so.12",
    "libcublas.so.12",
    "libcublasLt.so.12",
    "libnvrtc.so.12",
    "libcufft.so.11",
    "libcurand.so.10",
    "libcusolver.so.11",
    "libcusparse.so.12",
    "libnccl.so.2",
    "libnvJitLink.so.12",
}
CU13 = {
    "libcudart.so.13",
    "libcublas.so.13",
    "libcublasLt.so.13",
    "libnvrtc.so.13",
    "libcufft.so.12",
    "libcurand.so.10",
    "libcusolver.so.12",
    "libcusparse.so.12",
    "libnccl.so.2",
    "libnvJitLink.so.13",
}


REQUIRED_LIBS = {
    "nvidia-cuda-runtime-cu12": {"libcudart.so.12"},
    "nvidia-cublas-cu12": {"libcublas.so.12", "libcublasLt.so.12"},
}


@dataclass(frozen=True)
class Machine:
    name: str
    gpu: str  # CUSHIP_GPUS value
    cc: tuple[int, int] | None
    driver_version: str | None
    driver_major: int | None  # the newest CUDA major the driver runs
    torch: str | None  # "2.13.0"
    torch_cuda: str | None  # "13.0"; None: a CPU build
    system_libs: frozenset[str] = frozenset()

    @property
    def libs(self) -> set[str]:
        found = set(self.system_libs)
        if self.torch_cuda:
            found |= CU13 if self.torch_cuda.startswith("13") else CU12
        return found

    def env(self) -> dict[str, str]:
        env = {
            "CUSHIP_GPUS": self.gpu,
            "CUSHIP_NVCC": "none",
            "CUSHIP_TORCH": self.torch or "none",
            "CUSHIP_TORCH_CXX11ABI": "1",
            "CUSHIP_CUDA_LIBS": ",".join(sorted(self.system_libs)) or "none",
            "PATH": os.environ.get("PATH", ""),
        }
        if self.driver_version:
            env["CUSHIP_CUDA_DRIVER_VERSION"] = self.driver_version
        if self.torch:
            env["CUSHIP_TORCH_CUDA"] = self.torch_cuda or "none"
        return env


MACHINES = (
    Machine(
        name="H100 580 torch2.13 cu130",
        gpu="H100",
        cc=(9, 0),
        driver_version="580.65.06",
        driver_major=13,
        torch="2.13.0",
        torch_cuda="13.0",
    ),
    Machine(
        name="H100 580 torch2.13 cpu",
        gpu="H100",
        cc=(9, 0),
        driver_version="580.65.06",
        driver_major=13,
        torch="2.13.0+cpu",
        torch_cuda=None,
    ),
    Machine(
        name="A100 535 torch2.13 cu126",
        gpu="A100",
        cc=(8, 0),
        driver_version="535.104.05",
        driver_major=12,
        torch="2.13.0+cu126",
        torch_cuda="12.6",
    ),
    Machine(
        name="A100 535 no torch, CUDA 12 libs",
        gpu="A100",
        cc=(8, 0),
        driver_version="535.104.05",
        driver_major=12,
        torch=None,
        torch_cuda=None,
        system_libs=frozenset(CU12),
    ),
    Machine(
        name="B200 580 torch2.13 cu130",
        gpu="B200",
        cc=(10, 0),
        driver_version="580.65.06",
        driver_major=13,
        torch="2.13.0",
        torch_cuda="13.0",
    ),
    Machine(
        name="RTX5090 575 torch2.13 cu126",
        gpu="RTX 5090",
        cc=(12, 0),
        driver_version="575.57.08",
        driver_major=12,
        torch="2.13.0+cu126",
        torch_cuda="12.6",
    ),
    Machine(
        name="H100 580 torch2.11 cu130",
        gpu="H100",
        cc=(9, 0),
        driver_version="580.65.06",
        driver_major=13,
        torch="2.11.0",
        torch_cuda="13.0",
    ),
    Machine(
        name="L4 550 torch2.13 cu126",
        gpu="L4",
        cc=(8, 9),
        driver_version="550.54.15",
        driver_major=12,
        torch="2.13.0+cu126",
        torch_cuda="12.6",
    ),
    Machine(
        name="GB10 580 torch2.13 cu130",
        gpu="GB10:12.1",
        cc=(12, 1),
        driver_version="580.65.06",
        driver_major=13,
        torch="2.13.0",
        torch_cuda="13.0",
    ),
    Machine(
        name="V100 580 torch2.13 cu130",
        gpu="V100",
        cc=(7, 0),
        driver_version="580.65.06",
        driver_major=13,
        torch="2.13.0",
        torch_cuda="13.0",
    ),
    Machine(
        name="H100 580 torch2.13 cu130 + CUDA 12 libs",
        gpu="H100",
        cc=(9, 0),
        driver_version="580.65.06",
        driver_major=13,
        torch="2.13.0",
        torch_cuda="13.0",
        system_libs=frozenset(CU12),
    ),
    Machine(
        name="Thor 580 torch2.13 cu130",
        gpu="Thor:11.0",
        cc=(11, 0),
        driver_version="580.65.06",
        driver_major=13,
        torch="2.13.0",
        torch_cuda="13.0",
    ),
)


# --- the oracle: facts from cuobjdump, readelf and nm ----------------------------------------


@dataclass
class Obj:
    path: str
    needed: list[str]
    sass: list[tuple[int, int, str]]  # (major, minor, suffix)
    ptx: list[tuple[int, int, str]]
    torch_cxx: bool  # imports c10/at/torch C++ names (exact ABI)


@dataclass
class Wheel:
    name: str
    path: Path
    objects: dict[str, Obj] = field(default_factory=dict)
    files: set[str] = field(default_factory=set)  # file names of the shared objects it carries
    torch_pin: str | None = None  # the torch X.Y of an ==X.Y pin
    brings: set[str] = field(default_factory=set)  # libraries its requirements install


_ARCH = re.compile(r"\.(sm|compute)_(\d+)([af]?)\.(cubin|ptx)")


def _tool(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    return done.stdout + done.stderr


def oracle_facts(wheel: Path, cuobjdump: str, scratch: Path) -> tuple[Wheel, float]:
    """The wheel's objects as the external tools see them, and the tools' time."""
    name = wheel.name.split("-", 1)[0].replace("_", "-")
    found = Wheel(name=name, path=wheel)
    target = scratch / wheel.name
    with zipfile.ZipFile(wheel) as archive:
        members = [m for m in archive.namelist() if ".so" in m.rsplit("/", 1)[-1]]
        for member in members:
            archive.extract(member, target)
        meta = next(m for m in archive.namelist() if m.endswith(".dist-info/METADATA"))
        text = archive.read(meta).decode()
        pin = re.search(r"^Requires-Dist: torch \(?==\s*(\d+\.\d+)", text, re.M)
        found.torch_pin = pin[1] if pin else None
        # the CUDA 12 runtime wheels it requires come with it (faiss-gpu-cu12)
        for name, libs in REQUIRED_LIBS.items():
            if re.search(rf"^Requires-Dist: {name}\b(?!.*extra ==)", text, re.M):
                found.brings |= libs
    spent = 0.0
    for member in members:
        path = target / member
        found.files.add(member.rsplit("/", 1)[-1])
        start = time.perf_counter()
        dynamic = _tool(["readelf", "-d", "-W", str(path)])
        undefined = _tool(["nm", "-D", "--undefined-only", str(path)])
        listing = _tool([cuobjdump, "--list-elf", "--list-ptx", str(path)])
        spent += time.perf_counter() - start
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)
        # cuobjdump names PTX files "….sm_80.ptx": the kind is the file's extension
        arches = [(m[3], int(m[1]), m[2]) for m in _ARCH.findall(listing)]
        found.objects[member] = Obj(
            path=member,
            needed=needed,
            sass=[(n // 10, n % 10, s) for k, n, s in arches if k == "cubin"],
            ptx=[(n // 10, n % 10, s) for k, n, s in arches if k == "ptx"],
            torch_cxx=bool(re.search(r"_ZN[KR]*(3c10|2at|5torch)", undefined)),
        )
    return found, spent


def _runs_on(obj: Obj, cc: tuple[int, int]) -> bool:
    for major, minor, suffix in obj.sass:
        if suffix == "a" and (major, minor) == cc:
            return True
        if suffix != "a" and major == cc[0] and minor <= cc[1]:
            return True
    return any(not s and (major, minor) <= cc for major, minor, s in obj.ptx)


def _kernel_objects(wheel: Wheel, machine: Machine) -> tuple[list[Obj], str, bool]:
    """(objects that carry the package's kernels here, why, whether one running is enough)."""
    objs = wheel.objects
    if wheel.name == "bitsandbytes":
        if not machine.torch_cuda:
            return [], "bitsandbytes loads its CPU library on a CPU torch", False
        lib = f"bitsandbytes/libbitsandbytes_cuda{machine.torch_cuda.replace('.', '')}.so"
        return (
            ([objs[lib]] if lib in objs else []),
            f"bitsandbytes loads {lib.rsplit('/', 1)[-1]}",
            False,
        )
    if wheel.name == "torchao":
        return [o for o in objs.values() if o.sass or o.ptx], "any of its two kernel objects", True
    vendor = ("libnvjpeg", "libcudart", "libnvToolsExt", "libcutensor")
    own = [o for o in objs.values() if not o.path.rsplit("/", 1)[-1].startswith(vendor)]
    if wheel.name.startswith("cupy"):  # cuTENSOR and NCCL modules load only when used
        own = [o for o in own if not any(x in o.path for x in ("cutensor", "nccl"))]
    return [o for o in own if o.sass or o.ptx or _cuda_libs(o)], "its own objects", False


def _cuda_libs(obj: Obj) -> list[str]:
    return [
        n
        for n in obj.needed
        if n.startswith(("libcu", "libnv", "libnccl", "libc10_cuda", "libtorch_cuda"))
    ]


def _library_problem(lib: str, obj: Obj, wheel: Wheel, machine: Machine) -> str | None:
    base = lib.split(".so")[0]
    if base in ("libc10_cuda", "libtorch_cuda") and not machine.torch_cuda:
        return f"{lib}: no CUDA torch"
    if base.startswith(("libc10", "libtorch")) and machine.torch is None:
        return f"{lib}: no torch"
    runtime = re.match(r"libcudart\.so\.(\d+)", lib)
    major = int(runtime[1]) if runtime else None
    beside_torch = any(x.startswith("libc10_cuda") for x in obj.needed)
    if (
        major
        and beside_torch
        and machine.torch_cuda
        and major != int(machine.torch_cuda[:2].rstrip("."))
    ):
        return f"{lib} beside a torch of CUDA {machine.torch_cuda}"
    if major and machine.driver_major is not None and major > machine.driver_major:
        return f"{lib}: the driver runs CUDA {machine.driver_major}"
    nvidia = base.startswith(("libcu", "libnv", "libnccl"))
    if nvidia and lib not in wheel.files | wheel.brings and lib not in machine.libs:
        return f"{lib}: not on the machine"
    return None


def _obj_runs(obj: Obj, wheel: Wheel, machine: Machine) -> str | None:
    """None when the object loads and runs on the machine's GPU, else why not."""
    for lib in obj.needed:
        problem = _library_problem(lib, obj, wheel, machine)
        if problem is not None:
            return problem
    exact = obj.torch_cxx and wheel.torch_pin and machine.torch
    if exact and not str(machine.torch).startswith(f"{wheel.torch_pin}."):
        return f"exact torch ABI for torch {wheel.torch_pin}"
    if (obj.sass or obj.ptx) and machine.cc is not None and not _runs_on(obj, machine.cc):
        return "no SASS or PTX for the GPU"
    return None


def oracle(wheel: Wheel, machine: Machine) -> tuple[bool, str]:
    objects, why, any_one = _kernel_objects(wheel, machine)
    if not objects:
        return False, why
    problems = [(o.path, _obj_runs(o, wheel, machine)) for o in objects]
    bad = [(p, w) for p, w in problems if w is not None]
    ok = len(bad) < len(problems) if any_one else not bad
    return ok, "; ".join(f"{p.rsplit('/', 1)[-1]}: {w}" for p, w in bad[:2]) or why


# --- cuship's verdicts ----------------------------------------------------------------------


def cuship_verdict(project: str, index: str, machine: Machine) -> tuple[bool, str]:
    from cuship.resolve.install import resolve_index, target_from_env

    target = target_from_env(machine.env())
    _, resolution = resolve_index(project, index, target)
    if resolution.chosen is not None:
        notes = "; ".join(resolution.chosen.notes)
        return True, notes
    first = resolution.rejected[0]
    return False, f"[{first.rule}] {first.reason}"


# --- timing -----------------------------------------------------------------------------------


def time_readers(wheels: list[Wheel], cuobjdump: str, runs: int) -> dict[str, float]:
    return time_paths([path for wheel in wheels for path in _extracted(wheel)], cuobjdump, runs)


def time_paths(paths: list[Path], cuobjdump: str, runs: int) -> dict[str, float]:
    """Median seconds of cuship's reader and of readelf + nm + cuobjdump over ``paths``
    (``runs`` each), with how many objects and bytes that is."""
    from cuship.wheel.audit import scan_object

    def ours() -> None:
        for path in paths:
            scan_object(path)

    def theirs() -> None:
        for path in paths:
            _tool(["readelf", "-d", "-W", str(path)])
            _tool(["nm", "-D", "--undefined-only", str(path)])
            _tool([cuobjdump, "--list-elf", "--list-ptx", str(path)])

    result: dict[str, float] = {}
    for label, call in (("cuship", ours), ("readelf+nm+cuobjdump", theirs)):
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        result[label] = statistics.median(times)
    result["objects"] = len(paths)
    result["bytes"] = sum(p.stat().st_size for p in paths)
    return result


_EXTRACTED: dict[str, Path] = {}


def _extracted(wheel: Wheel) -> list[Path]:
    root = _EXTRACTED[wheel.path.name]
    return [root / member for member in wheel.objects]


def download(folder: Path) -> None:
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_FIND_LINKS": ""}
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    args = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q"]
    args += ["--python-version", version, "--index-url", PYPI, "-d", str(folder)]
    for platform in (
        "manylinux_2_28_x86_64",
        "manylinux_2_24_x86_64",
        "manylinux_2_17_x86_64",
        "manylinux2014_x86_64",
    ):
        args += ["--platform", platform]
    subprocess.run([*args, *WHEELS], env=env, check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--wheels", type=Path)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cuobjdump", default=shutil.which("cuobjdump") or "")
    args = parser.parse_args()
    cuobjdump = args.cuobjdump
    if not cuobjdump:
        import triton  # its wheel bundles one

        cuobjdump = str(Path(triton.__file__).parent / "backends/nvidia/bin/cuobjdump")
    scratch = Path(tempfile.mkdtemp(prefix="bench-judge-"))
    folder = args.wheels or scratch / "wheels"
    if args.wheels is None:
        folder.mkdir()
        download(folder)
    files = sorted(folder.glob("*.whl"))
    wheels = []
    for path in files:
        found, _ = oracle_facts(path, cuobjdump, scratch)
        _EXTRACTED[path.name] = scratch / path.name
        wheels.append(found)
    site = scratch / "site"
    subprocess.run(
        [sys.executable, "-m", "cuship", "index", *map(str, files), "-o", str(site)],
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        check=True,
        capture_output=True,
    )
    index = (site / "simple").as_uri()
    rows: list[dict[str, Any]] = []
    for machine in MACHINES:
        for wheel in wheels:
            ours, why = cuship_verdict(wheel.name, index, machine)
            truth, because = oracle(wheel, machine)
            rows.append(
                {
                    "machine": machine.name,
                    "wheel": wheel.path.name,
                    "cuship": ours,
                    "cuship_why": why,
                    "oracle": truth,
                    "oracle_why": because,
                    "agree": ours == truth,
                }
            )
    width = max(len(m.name) for m in MACHINES)
    for row in rows:
        mark = "ok " if row["agree"] else "XX "
        print(
            f"{mark}{row['machine']:<{width}}  {row['wheel'].split('-')[0]:<15} "
            f"cuship {'fits ' if row['cuship'] else 'no   '} oracle {'runs ' if row['oracle'] else 'no   '}"
            f"  {row['cuship_why'][:110]}"
        )
    agreed = sum(r["agree"] for r in rows)
    wrong_fits = sum(1 for r in rows if r["cuship"] and not r["oracle"])
    print(
        f"\nagreement: {agreed} of {len(rows)} ({len(MACHINES)} machines x {len(wheels)} wheels); "
        f"wrong 'fits': {wrong_fits}"
    )
    timing = time_readers(wheels, cuobjdump, args.runs)
    print(
        f"inspect over {timing['objects']} shared objects ({timing['bytes'] / 1e6:.0f} MB): "
        f"cuship {timing['cuship']:.3f} s, readelf+nm+cuobjdump "
        f"{timing['readelf+nm+cuobjdump']:.3f} s: "
        f"{timing['readelf+nm+cuobjdump'] / timing['cuship']:.1f}x"
    )
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "timing": timing}, indent=1))
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
