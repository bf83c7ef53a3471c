"""The judge on real CUDA wheels from PyPI that nobody here wrote (none of bench_judge.py's), on
faked machines whose files are real, against an oracle built apart from cuship
(benchmarks/_world_oracle.py: binutils, cuobjdump and a real ``dlopen(RTLD_NOW)`` of every
object).

Run: python benchmarks/bench_judge_world.py [--cache DIR] [--src SRC ...] [--json OUT]

Everything downloaded or built is kept under ``--cache`` (default ``/work/cache/judge-world``):

- ``wheels/``: the 18 wheels of :data:`WHEELS` for CPython 3.11 (``pip download --no-deps``);
- ``envs/``: real venvs (``bare``; ``cpu``: torch 2.13.0+cpu; ``cu130``: PyPI's torch 2.13.0
  with NVIDIA's CUDA 13 wheels) and NVIDIA's CUDA 12 and CUDA 13 library wheels as plain
  directories (``cu12libs``, ``cu13libs``). PyPI's mirror here lacks nvidia-cuda-cupti 13 and
  nvidia-nccl-cu13 2.29.7: libcupti.so.13 is copied from the local CUDA 13.0 toolkit and NCCL
  2.32.3 stands in;
- ``pkgs/``: every wheel installed with ``--no-deps`` (``pip install --target``); each machine's
  venv sees it through a ``.pth`` file, and ``pkgs/nvidia`` is, per machine, a link to the NVIDIA
  wheels of that machine's site (or absent), so ``$ORIGIN/../nvidia/cu13/lib`` means what it
  would in one site-packages;
- ``stub/``: ``libcuda.so.1``, ``libnvidia-ml.so.1`` and ``libnvcuvid.so.1`` built by gcc,
  defining every driver symbol the wheels import: the driver of every machine with a GPU.

Each machine: a GPU (``CUSHIP_GPUS``), a driver version, a venv (torch or none), and the CUDA
libraries of its system (``LD_LIBRARY_PATH``); its loader cache is none (the oracle runs Python
through ``ld.so --inhibit-cache``; cuship is told ``CUSHIP_LD_CACHE=none``). cuship's verdict is
``cuship doctor``'s for each package (``diagnose`` in a subprocess, ``PYTHONPATH=SRC``; ``--src``
may name several trees, e.g. main's and this branch's, for before and after); "fits": no
problem. The oracle's: every main object loads and the driver and GPU run its code.

Prints the table, the agreement per source tree, doctor vs dlopen per package, and the time of
``cuship inspect``'s reader against ``readelf + nm + cuobjdump`` over every object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _world_oracle as oracle

REPO = Path(__file__).resolve().parents[1]
WHEELS = (
    "ctranslate2==4.8.5",
    "jax-cuda13-plugin==0.10.2",
    "jax-cuda12-plugin==0.10.2",
    "jax-cuda13-pjrt==0.10.2",
    "jax-cuda12-pjrt==0.10.2",
    "fbgemm-gpu==1.9.0",
    "fbgemm-gpu-genai==1.9.0",
    "torchaudio==2.11.1",
    "onnxruntime-gpu==1.31.1",
    "warp-lang==1.19.0",
    "cupy-cuda11x==13.6.0",
    "cuda-bindings==13.5.0",
    "pynvjitlink-cu12==0.7.0",
    "nvidia-cudnn-frontend==1.32.0",
    "auto-gptq==0.7.1",
    "xgboost==3.2.0",
    "cucim-cu12==26.10.0",
    "torchcodec==0.17.0",
)
CU12 = ("nvidia-cuda-runtime-cu12", "nvidia-cublas-cu12", "nvidia-cuda-nvrtc-cu12",
        "nvidia-nvjitlink-cu12")  # fmt: skip
CU13 = ("cuda-toolkit[cublas,cudart,cufft,cufile,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx]"
        "==13.0.3", "nvidia-cudnn-cu13", "nvidia-cusparselt-cu13", "nvidia-nccl-cu13",
        "nvidia-nvshmem-cu13")  # fmt: skip
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64",
             "manylinux_2_17_x86_64", "manylinux2014_x86_64")  # fmt: skip


@dataclass(frozen=True)
class Machine:
    name: str
    gpu: str  # "H100"
    cc: str  # "9.0"
    driver: str
    env: str  # bare, cpu, cu130
    nvidia: str | None  # the NVIDIA wheels of its site: cu130's, cu13libs', or none
    system: tuple[str, ...] = ()  # CUDA libraries on LD_LIBRARY_PATH: "cu12", "cu13"


MACHINES = (
    Machine("H100 580 torch2.13 cu130", "H100", "9.0", "580.65.06", "cu130", "cu130"),
    Machine("H100 580 torch2.13 CPU", "H100", "9.0", "580.65.06", "cpu", None),
    Machine("A100 535 no torch, CUDA 12 system", "A100", "8.0", "535.104.05", "bare", None, ("cu12",)),
    Machine("L4 550 no torch, CUDA 13 wheels", "L4", "8.9", "550.54.15", "bare", "cu13libs"),
    Machine("RTX5090 575 torch2.13 CPU, CUDA 12 system", "RTX 5090", "12.0", "575.57.08", "cpu", None, ("cu12",)),
    Machine("B200 590 torch2.13 cu130 + CUDA 12 system", "B200", "10.0", "590.44.01", "cu130", "cu130", ("cu12",)),
    Machine("V100 470 no torch, no CUDA libs", "V100", "7.0", "470.256.02", "bare", None),
    Machine("T4 535 torch2.13 cu130", "T4", "7.5", "535.104.05", "cu130", "cu130"),
    Machine("H100 580 no torch, CUDA 13 system", "H100", "9.0", "580.65.06", "bare", None, ("cu13",)),
)  # fmt: skip


def _pip(*args: str) -> None:
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_FIND_LINKS": ""}
    subprocess.run(["nice", "-n", "10", sys.executable, "-m", "pip", *args], env=env, check=True)


def _download(target: Path, specs: tuple[str, ...], deps: bool = False) -> None:
    args = ["download", "-q", "--only-binary=:all:", "--python-version", "3.11", "-d", str(target)]
    args += [a for p in PLATFORMS for a in ("--platform", p)]
    _pip(*args, *([] if deps else ["--no-deps"]), *specs)


def ensure_wheels(cache: Path) -> list[Path]:
    folder = cache / "wheels"
    folder.mkdir(parents=True, exist_ok=True)
    for spec in WHEELS:
        name = spec.split("==")[0].replace("-", "_")
        if not any(p.name.lower().startswith(name.lower() + "-") for p in folder.glob("*.whl")):
            _download(folder, (spec,))
    return sorted(folder.glob("*.whl"))


def _site(venv: Path) -> Path:
    return (
        venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    )


def ensure_envs(cache: Path) -> dict[str, Path]:
    """The venvs and library directories (see the module); each made once."""
    envs = cache / "envs"
    made = {name: envs / name for name in ("bare", "cpu", "cu130", "cu12libs", "cu13libs")}
    if not made["bare"].exists():
        subprocess.run(
            [sys.executable, "-m", "venv", "--without-pip", str(made["bare"])], check=True
        )
    if not made["cpu"].exists():
        subprocess.run([sys.executable, "-m", "venv", str(made["cpu"])], check=True)
        cpu = next(Path("/opt/wheels").glob("torch-2.13.0+cpu-*.whl"), None)
        pip = str(made["cpu"] / "bin/pip")
        subprocess.run([pip, "install", "-q", str(cpu or "torch==2.13.0+cpu")], check=True)
    for name, specs in (("cu12libs", CU12), ("cu13libs", CU13)):
        if not made[name].exists():
            wheels = cache / f"{name}-wheels"
            _download(wheels, specs, deps=True)
            target = str(_site(made[name]))
            _pip("install", "-q", "--no-deps", "--target", target, *map(str, wheels.glob("*.whl")))
    if not made["cu130"].exists():
        _cuda_torch(cache, made["cu130"])
    for name in ("cu130", "cu13libs"):  # PyPI's mirror here has no nvidia-cuda-cupti 13
        lib = _site(made[name]) / "nvidia/cu13/lib"
        if not (lib / "libcupti.so.13").exists():
            shutil.copy(os.path.realpath("/usr/local/cuda-13.0/lib/libcupti.so.13"), lib)
    return made


def _cuda_torch(cache: Path, venv: Path) -> None:
    """PyPI's torch 2.13.0 (CUDA 13.0) with NVIDIA's CUDA 13 wheels, in ``venv``."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    torch = cache / "torch-cu130"
    _download(torch, ("torch==2.13.0",))
    pip = str(venv / "bin/pip")
    libs = cache / "cu13libs-wheels"
    for wheels in (torch, libs):
        subprocess.run(
            [pip, "install", "-q", "--no-deps", *map(str, wheels.glob("*.whl"))], check=True
        )
    deps = ("filelock", "typing-extensions", "sympy", "networkx", "jinja2", "fsspec")
    subprocess.run([pip, "install", "-q", *deps], check=True)


def ensure_pkgs(cache: Path, wheels: list[Path], envs: dict[str, Path]) -> Path:
    pkgs = cache / "pkgs"
    if not pkgs.exists():
        _pip("install", "-q", "--no-deps", "--target", str(pkgs), *map(str, wheels))
    for name in ("bare", "cpu", "cu130"):
        (_site(envs[name]) / "zz-bench-pkgs.pth").write_text(str(pkgs) + "\n")
    return pkgs


def dists_of(pkgs: Path) -> dict[str, list[str]]:
    """Each distribution in ``pkgs`` and the shared objects its RECORD lists."""
    found: dict[str, list[str]] = {}
    for info in sorted(pkgs.glob("*.dist-info")):
        meta = (info / "METADATA").read_text(errors="replace")
        name = next(
            line.split(":", 1)[1].strip() for line in meta.splitlines() if line.startswith("Name:")
        )
        rows = (info / "RECORD").read_text().splitlines()
        found[name] = [
            r.split(",", 1)[0] for r in rows
            if r.split(",", 1)[0].rsplit("/", 1)[-1].endswith(".so") or ".so." in r.split(",", 1)[0]
        ]  # fmt: skip
    return found


def ensure_stub(cache: Path, pkgs: Path, objects: dict[str, list[str]]) -> Path:
    """The driver's libraries as a stub: every cu*/nvml*/cuvid* symbol the objects import."""
    stub = cache / "stub"
    if (stub / "libcuda.so.1").exists():
        return stub
    stub.mkdir(exist_ok=True)
    wanted: dict[str, set[str]] = {
        "libcuda.so.1": set(),
        "libnvidia-ml.so.1": set(),
        "libnvcuvid.so.1": set(),
    }
    for paths in objects.values():
        for rel in paths:
            for name in oracle.tool(["nm", "-D", "--undefined-only", str(pkgs / rel)]).split():
                if name.startswith("nvml"):
                    wanted["libnvidia-ml.so.1"].add(name.split("@")[0])
                elif name.startswith("cuvid"):
                    wanted["libnvcuvid.so.1"].add(name.split("@")[0])
                elif name.startswith("cu") and name[2:3].isupper():
                    wanted["libcuda.so.1"].add(name.split("@")[0])
    for soname, symbols in wanted.items():
        source = stub / f"{soname}.c"
        source.write_text(
            "".join(f"int {s}(void) {{ return 999; }}\n" for s in sorted(symbols) or ["cuInit"])
        )
        subprocess.run(
            [
                "gcc",
                "-shared",
                "-fPIC",
                f"-Wl,-soname,{soname}",
                "-o",
                str(stub / soname),
                str(source),
            ],
            check=True,
        )
    return stub


def packages(
    cache: Path, pkgs: Path, objects: dict[str, list[str]], cuobjdump: str
) -> dict[str, oracle.Package]:
    store = cache / "oracle-facts.json"
    if store.exists():
        raw = json.loads(store.read_text())
    else:
        raw = {}
        for dist, rels in objects.items():
            facts = [oracle.object_facts(pkgs, rel, cuobjdump).__dict__ for rel in rels]
            info = next(pkgs.glob(f"{dist.replace('-', '_')}-*.dist-info"), None) or next(
                i for i in pkgs.glob("*.dist-info") if _name(i) == dist
            )
            meta = (info / "METADATA").read_text(errors="replace")
            raw[dist] = {"objects": facts, "meta": meta}
        store.write_text(json.dumps(raw))
    found = {}
    for dist, entry in raw.items():
        objs = [oracle.Obj(**o) for o in entry["objects"]]
        requires = [
            line.split(":", 1)[1].strip()
            for line in entry["meta"].splitlines()
            if line.startswith("Requires-Dist:")
        ]
        torch = any(
            r.split()[0].split(";")[0].startswith("torch")
            and "extra ==" not in r
            and r.split()[0].split("[")[0].split(">")[0].split("=")[0].split("<")[0] == "torch"
            for r in requires
        )
        torch = torch or any(n.startswith(("libtorch", "libc10")) for o in objs for n in o.needed)
        pathfinder = (
            any(
                r.split()[0].split(";")[0].split(">")[0].split("=")[0]
                in ("cuda-pathfinder", "cuda-bindings", "cuda-core")
                for r in requires
            )
            or dist == "cuda-bindings"
        )
        found[dist] = oracle.Package(
            dist=dist, objects=objs, needs_torch=torch, pathfinder=pathfinder
        )
    return found


def _name(info: Path) -> str:
    meta = (info / "METADATA").read_text(errors="replace")
    return next(
        line.split(":", 1)[1].strip() for line in meta.splitlines() if line.startswith("Name:")
    )


def machine_env(machine: Machine, envs: dict[str, Path], stub: Path) -> dict[str, str]:
    dirs = [str(stub)]
    for system in machine.system:
        dirs += sorted(str(p) for p in (_site(envs[f"{system}libs"]) / "nvidia").glob("*/lib"))
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/root"),
        "LD_LIBRARY_PATH": ":".join(dirs),
        "CUSHIP_GPUS": f"{machine.gpu}:{machine.cc}",
        "CUSHIP_CUDA_DRIVER_VERSION": machine.driver,
        "CUSHIP_LD_CACHE": "none",
        "CUSHIP_NVCC": "none",
    }


def link_nvidia(pkgs: Path, machine: Machine, envs: dict[str, Path]) -> None:
    link = pkgs / "nvidia"
    if link.is_symlink():
        link.unlink()
    elif link.exists():
        raise SystemExit(f"{link} is a directory: a wheel installed NVIDIA libraries into pkgs")
    if machine.nvidia is not None:
        link.symlink_to(_site(envs[machine.nvidia]) / "nvidia")


_VERDICT = r"""
import json, sys
from cuship.doctor import diagnose
names, paths = json.loads(sys.argv[1]), json.loads(sys.argv[2])
kwargs = {}
try:
    from cuship.doctor import demangler
    kwargs["demangle"] = demangler()
except ImportError:
    pass
report = diagnose(names, paths=paths, **kwargs)
print("CUSHIP " + json.dumps({
    p.name: {"fits": not p.problems, "complete": not p.unchecked,
             "problems": [f"[{x.area}] {x.message}" for x in p.problems],
             "unchecked": list(p.unchecked)}
    for p in report.packages}))
"""


def cuship_verdicts(
    src: Path, names: list[str], paths: list[str], env: dict[str, str]
) -> tuple[dict[str, Any], float]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _VERDICT, json.dumps(names), json.dumps(paths)],
        capture_output=True, text=True, env={**env, "PYTHONPATH": str(src)}, timeout=900, check=False,
    )  # fmt: skip
    line = next((line for line in done.stdout.splitlines() if line.startswith("CUSHIP ")), None)
    if line is None:
        raise SystemExit(f"cuship failed ({src}):\n{done.stderr[-3000:]}")
    return json.loads(line[len("CUSHIP ") :]), time.perf_counter() - start


_LOADS = r"""
import json, sys
from cuship.doctor import diagnose
report = diagnose(json.loads(sys.argv[1]), paths=json.loads(sys.argv[2]))
print("LOADS " + json.dumps({p.name: {x.path: x.loads for x in getattr(p, "loads", ())} for p in report.packages}))
"""


def doctor_loads(
    names: list[str], paths: list[str], env: dict[str, str]
) -> dict[str, dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-c", _LOADS, json.dumps(names), json.dumps(paths)],
        capture_output=True, text=True, env={**env, "PYTHONPATH": str(REPO / "src")}, timeout=900,
        check=False,
    )  # fmt: skip
    line = next((line for line in done.stdout.splitlines() if line.startswith("LOADS ")), None)
    return {} if line is None else json.loads(line[len("LOADS ") :])


def time_readers(
    pkgs: Path, objects: dict[str, list[str]], cuobjdump: str, runs: int
) -> dict[str, float]:
    """bench_judge's reader timing over every object of ``pkgs``."""
    from bench_judge import time_paths

    return time_paths([pkgs / rel for rels in objects.values() for rel in rels], cuobjdump, runs)


def _cuobjdump() -> str:
    found = shutil.which("cuobjdump")
    if found:
        return found
    import triton  # its wheel carries one

    return str(Path(triton.__file__).parent / "backends/nvidia/bin/cuobjdump")


@dataclass
class World:
    """What every machine shares: the packages, their facts, the venvs, the stub driver."""

    cache: Path
    envs: dict[str, Path]
    pkgs: Path
    stub: Path
    known: dict[str, oracle.Package]
    sources: list[Path]
    rows: list[dict[str, Any]]
    loads: dict[str, list[int]]  # per package: [objects whose doctor verdict matches, judged]
    seconds: dict[str, list[float]]


def run_machine(world: World, machine: Machine) -> None:
    """The oracle and cuship (each source tree) on one machine; rows appended to ``world``."""
    link_nvidia(world.pkgs, machine, world.envs)
    env = machine_env(machine, world.envs, world.stub)
    paths = [str(_site(world.envs[machine.env])), str(world.pkgs)]
    python = world.envs[machine.env] / "bin" / "python"
    extra = [str(p) for p in (world.pkgs / "nvidia").glob("*/lib")] if machine.nvidia else []
    names = sorted(world.known)
    scratch = world.cache / "scratch"
    scratch.mkdir(exist_ok=True)
    truths = {}
    for name in names:
        spec = oracle.child_spec(world.known[name], world.pkgs, extra)
        loaded = oracle.run_child(python, spec, env, scratch)
        truths[name] = (loaded, *oracle.verdict(world.known[name], machine, loaded))
    verdicts = {}
    for src in world.sources:
        verdicts[str(src)], spent = cuship_verdicts(src, names, paths, env)
        world.seconds[str(src)].append(spent)
    doctor = doctor_loads(names, paths, env)
    unjudged = {"fits": None, "problems": ["not judged"], "unchecked": []}
    for name in names:
        loaded, runs, why = truths[name]
        row = {"machine": machine.name, "package": name, "oracle": runs, "oracle_why": why}
        row.update({str(src): verdicts[str(src)].get(name, unjudged) for src in world.sources})
        by_path = {obj.path: obj for obj in world.known[name].objects}
        for rel, result in loaded.get("objects", {}).items():
            ours = doctor.get(name, {}).get(rel)
            if ours is not None:
                # as Python loads it: alone, or (a grafted pkg.libs library) through the
                # objects that link it, whose real dlopen loaded it
                real = result.get("load") == "ok" or (
                    rel in by_path
                    and oracle.loaded_through(by_path[rel], world.known[name].objects, loaded)
                )
                world.loads[name][1] += 1
                world.loads[name][0] += int(ours == real)
        world.rows.append(row)
        _print_row(row, world.sources)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--cache", type=Path, default=Path("/work/cache/judge-world"))
    parser.add_argument("--src", type=Path, action="append", help="cuship trees to judge with")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--machines", help="indexes of MACHINES to run (0,3,5)")
    args = parser.parse_args()
    sources = args.src or [REPO / "src"]
    cuobjdump = _cuobjdump()
    wheels = ensure_wheels(args.cache)
    envs = ensure_envs(args.cache)
    pkgs = ensure_pkgs(args.cache, wheels, envs)
    objects = dists_of(pkgs)
    stub = ensure_stub(args.cache, pkgs, objects)
    known = packages(args.cache, pkgs, objects, cuobjdump)
    world = World(args.cache, envs, pkgs, stub, known, sources, [], {n: [0, 0] for n in known},
                  {str(s): [] for s in sources})  # fmt: skip
    chosen = MACHINES if not args.machines else [MACHINES[int(i)] for i in args.machines.split(",")]
    try:
        for machine in chosen:
            run_machine(world, machine)
    finally:
        link = pkgs / "nvidia"
        if link.is_symlink():
            link.unlink()
    summary = _summary(world.rows, sources, world.loads, world.seconds)
    summary["timing"] = timing = time_readers(pkgs, objects, cuobjdump, args.runs)
    print(
        f"\nread every object ({timing['objects']} objects, {timing['bytes'] / 1e6:.0f} MB): "
        f"cuship {timing['cuship']:.2f} s, readelf+nm+cuobjdump {timing['readelf+nm+cuobjdump']:.2f} s"
    )
    if args.json:
        args.json.write_text(json.dumps({"rows": world.rows, "summary": summary}, indent=1))
    return 0


def _print_row(row: dict[str, Any], sources: list[Path]) -> None:
    last = row[str(sources[-1])]
    mark = "ok " if last["fits"] == row["oracle"] else "XX "
    said = "; ".join(last["problems"])[:150] or (
        "(not checked: " + "; ".join(last["unchecked"])[:100] + ")" if last["unchecked"] else ""
    )
    print(
        f"{mark}{row['machine'][:34]:<34} {row['package'][:22]:<22} cuship {'fits' if last['fits'] else 'no  '} "
        f"oracle {'runs' if row['oracle'] else 'no  '}  {said} || {row['oracle_why'][:120]}",
        flush=True,
    )


def _summary(
    rows: list[dict[str, Any]],
    sources: list[Path],
    loads: dict[str, list[int]],
    seconds: dict[str, list[float]],
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for src in sources:
        cells = [r for r in rows if r[str(src)]["fits"] is not None]
        agree = sum(r[str(src)]["fits"] == r["oracle"] for r in cells)
        wrong = sum(bool(r[str(src)]["fits"]) and not r["oracle"] for r in cells)
        silent = sum(
            bool(r[str(src)]["fits"]) and not r["oracle"] and not r[str(src)]["unchecked"]
            for r in cells
        )
        out[str(src)] = {"cells": len(rows), "judged": len(cells), "agree": agree, "wrong_fits": wrong,
                         "silent_wrong_fits": silent, "seconds": round(sum(seconds[str(src)]), 1)}  # fmt: skip
        print(
            f"\n{src}: agreement {agree} of {len(rows)} ({len(cells)} judged); wrong 'fits': {wrong} "
            f"({silent} with nothing said); doctor {sum(seconds[str(src)]):.1f} s over the machines"
        )
    print("\ndoctor's loads vs dlopen, objects x machines, per package:")
    for name, (same, total) in sorted(loads.items()):
        print(f"  {name:<28} {same}/{total}")
    out["doctor_vs_dlopen"] = loads
    return out


if __name__ == "__main__":
    raise SystemExit(main())
