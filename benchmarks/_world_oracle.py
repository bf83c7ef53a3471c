"""The oracle of bench_judge_world.py, written apart from cuship's code: what binutils, cuobjdump
and a real ``dlopen(RTLD_NOW)`` say of each object, and the rules that turn those facts into
"this package's CUDA code runs on that machine".

Facts (per object, read once per wheel): ``readelf -d`` (NEEDED, RPATH, RUNPATH), ``nm -D``
(undefined symbols, and whether it imports ``dlopen``), ``cuobjdump --list-elf --list-ptx`` (the
device code the runtime loads) and ``cuobjdump -ptx`` (the ``.version`` line of its PTX),
``strings`` (the libraries it names, ``/cudart.shm.`` of a static CUDA runtime, ``Cuda compilation
tools, release X.Y`` of its cubins). Loads: each object opened with ``ctypes.CDLL`` (RTLD_NOW) in a
forked child of a real interpreter of the machine's venv, started through ``ld.so
--inhibit-cache`` (the machine's loader cache is none: only LD_LIBRARY_PATH, RPATH/RUNPATH and the
default directories), after ``import torch`` when the package needs torch; then the NVIDIA
libraries it names opened the same way from its RPATH/RUNPATH (and NVIDIA's wheels for a package
built on cuda-pathfinder). The driver is a stub ``libcuda.so.1`` built by gcc that defines every
driver symbol the wheels import.

Rules, from NVIDIA's tables (not cuship's data files): a driver runs CUDA majors up to its own
and needs the family minimum of the major (450 for 11, 525 for 12, 580 for 13); it JIT-compiles
PTX of the ISA versions its own CUDA release knows; SASS runs on GPUs of its major with a minor not
below it (``a``: that GPU only), PTX on GPUs at or above it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# https://docs.nvidia.com/cuda/parallel-thread-execution/#release-notes-ptx-release-history;
# 9.2 and 9.4 as torchaudio 2.11.1 and warp-lang 1.19.0 write them beside CUDA 13.2/13.4 cubins.
ISA_CUDA = {
    "7.8": (11, 8), "8.0": (12, 0), "8.1": (12, 1), "8.2": (12, 2), "8.3": (12, 3),
    "8.4": (12, 4), "8.5": (12, 5), "8.6": (12, 7), "8.7": (12, 8), "8.8": (12, 9),
    "9.0": (13, 0), "9.1": (13, 1), "9.2": (13, 2), "9.3": (13, 3), "9.4": (13, 4),
}  # fmt: skip
# The CUDA release of each driver branch used (the CUDA toolkit release notes' driver table).
DRIVER_CUDA = {"470": (11, 4), "535": (12, 2), "550": (12, 4), "575": (12, 9), "580": (13, 0),
               "590": (13, 1)}  # fmt: skip
FAMILY_MIN = {11: 450, 12: 525, 13: 580}
CORE_STEMS = ("libcudart", "libcublas", "libcublasLt", "libnvrtc", "libnvJitLink")
_NAMES = re.compile(r"lib[A-Za-z0-9_+-]+\.so(?:\.[0-9]+)*")


def tool(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    return done.stdout + done.stderr


@dataclass
class Obj:
    path: str  # relative to the site directory
    needed: list[str]
    rpath: list[str]
    runpath: list[str]
    undefined: list[str]
    sass: list[str]  # "90", "90a"
    ptx: list[str]
    isa: list[str]  # "8.7"
    static_runtime: bool
    toolkit: str | None
    dlopen: bool
    names: list[str]  # NVIDIA libraries named in its strings
    libnames: list[str] = field(default_factory=list)  # every library named in its strings

    @property
    def device(self) -> bool:
        return bool(self.sass or self.ptx)


_ARCH = re.compile(r"\.(sm|compute)_(\d+[af]?)\.(cubin|ptx)")


def _section_text(path: str, sections: str, name: str) -> str:
    """The bytes of section ``name`` (its offset and size as ``readelf -S -W`` lists them),
    as text; empty when the object has none."""
    row = re.search(rf"\s{re.escape(name)}\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)", sections)
    if row is None:
        return ""
    with open(path, "rb") as handle:
        handle.seek(int(row[1], 16))
        return handle.read(int(row[2], 16)).decode("latin-1")


def object_facts(site: Path, relative: str, cuobjdump: str) -> Obj:
    path = str(site / relative)
    dynamic = tool(["readelf", "-d", "-W", path])
    sections = tool(["readelf", "-S", "-W", path])
    undefined = [u.split("@")[0] for u in tool(["nm", "-D", "--undefined-only", path]).split()]
    listing = tool([cuobjdump, "--list-elf", "--list-ptx", path])
    arches = _ARCH.findall(listing)
    ptx_text = tool([cuobjdump, "-ptx", path]) if any(k == "ptx" for _, _, k in arches) else ""
    text = tool(["strings", "-n", "6", path])
    # the name dlopen is given is a string literal, in .rodata: the whole file's strings also
    # hold the symbol tables' names (cumm's "cudaMalloc@libcudart.so.12" is a symbol version)
    literals = _section_text(path, sections, ".rodata")

    def tag(name: str) -> list[str]:
        found = re.findall(rf"\({name}\)\s+\S+ \S+: \[([^\]]*)\]", dynamic)
        return [p for v in found for p in v.split(":") if p]

    every = sorted(set(_NAMES.findall(literals)))
    names = [n for n in every if n.startswith(("libcu", "libnv", "libnccl"))]
    toolkit = re.search(r"Cuda compilation tools, release (\d+\.\d+)", text)
    return Obj(
        path=relative,
        needed=re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic),
        rpath=tag("RPATH"),
        runpath=tag("RUNPATH"),
        undefined=[u for u in undefined if u not in ("U", "w", "v")],
        sass=sorted({a for k, a, kind in arches if kind == "cubin"}),
        ptx=sorted({a for k, a, kind in arches if kind == "ptx"}),
        isa=sorted(set(re.findall(r"^\.version (\d+\.\d+)", ptx_text, re.M))),
        static_runtime="/cudart.shm." in text,
        toolkit=toolkit[1] if toolkit else None,
        dlopen="dlopen" in undefined,
        names=names,
        libnames=every,
    )


@dataclass
class Package:
    dist: str
    objects: list[Obj] = field(default_factory=list)
    needs_torch: bool = False
    pathfinder: bool = False


def _cc(text: str) -> tuple[int, int]:
    major, _, minor = text.partition(".")
    return int(major), int(minor)


def _sm(arch: str) -> tuple[int, int, str]:
    number, suffix = int(arch.rstrip("af")), arch[len(arch.rstrip("af")) :]
    return number // 10, number % 10, suffix


def runs_on(obj: Obj, cc: tuple[int, int], driver: str) -> str | None:
    """None when ``obj`` has code this GPU runs with this driver, else why not."""
    for arch in obj.sass:
        major, minor, suffix = _sm(arch)
        if (suffix == "a" and (major, minor) == cc) or (
            suffix != "a" and major == cc[0] and minor <= cc[1]
        ):
            return None
    jit = [a for a in obj.ptx if not a.endswith(("a", "f")) and _sm(a)[:2] <= cc]
    if not jit:
        return f"no SASS or PTX for {cc[0]}.{cc[1]}"
    limit = DRIVER_CUDA[driver.split(".")[0]]
    isa = max((ISA_CUDA.get(i, (99, 0)) for i in obj.isa), default=None)
    if isa is not None and isa > limit:
        return f"its PTX needs CUDA {isa[0]}.{isa[1]}; driver {driver} JITs up to {limit}"
    return None


def majors(obj: Obj) -> list[tuple[int, str]]:
    """The CUDA majors ``obj`` needs, from its own facts."""
    found = []
    for lib in obj.needed:
        m = re.match(r"(libcudart|libcublas|libcublasLt|libnvrtc|libnvJitLink)\.so\.(\d+)", lib)
        if m:
            found.append((int(m[2]), lib))
    for entry in obj.rpath + obj.runpath:
        m = re.search(r"nvidia/cu(\d\d)", entry)
        if m:
            found.append((int(m[1]), entry))
    if not any(lib.startswith("libcudart.so") for lib in obj.needed) and (
        obj.device or obj.static_runtime
    ):
        if obj.toolkit:
            found.append((int(obj.toolkit.split(".")[0]), f"made by CUDA {obj.toolkit}"))
        elif obj.isa:
            found.append((ISA_CUDA.get(max(obj.isa), (0, 0))[0], f"PTX ISA {max(obj.isa)}"))
    opened: dict[str, set[int]] = {}
    for name in obj.names:
        m = re.match(r"(lib\w+)\.so\.(\d+)$", name)
        if m and m[1] in CORE_STEMS:
            opened.setdefault(m[1], set()).add(int(m[2]))
    found += [(next(iter(v)), f"opens {k}") for k, v in opened.items() if len(v) == 1]
    return [(m, why) for m, why in found if m]


def driver_runs(major: int, driver: str) -> bool:
    branch = int(driver.split(".")[0])
    return DRIVER_CUDA[str(branch)][0] >= major and branch >= FAMILY_MIN.get(major, 0)


def optional(obj: Obj, package: Package, loads: dict[str, Any]) -> bool:
    """Objects that serve only some machines: arch-specific device code only, or a plugin the
    package opens by name that carries no kernels (onnxruntime's TensorRT provider)."""
    code = obj.sass + obj.ptx
    if code and all(a.endswith("a") for a in code):
        return True
    base = obj.path.rsplit("/", 1)[-1]
    opener = any(base in other.libnames for other in package.objects if other is not obj)
    return not obj.device and opener


def verdict(package: Package, machine: Any, loaded: dict[str, Any]) -> tuple[bool, str]:
    """(runs, why) of ``package`` on ``machine`` from the loads the child reported."""
    cc, driver = _cc(machine.cc), machine.driver
    objects = package.objects
    problems: list[str] = []
    if package.needs_torch and loaded.get("torch") not in ("ok", None):
        return False, f"import torch: {loaded['torch']}"
    for obj in objects:
        result = loaded["objects"].get(obj.path, {})
        optional_one = optional(obj, package, loaded)
        if result.get("load") != "ok":
            if not optional_one and not loaded_through(obj, objects, loaded):
                problems.append(f"{obj.path}: {result.get('load', 'not loaded')}"[:200])
            continue
        for major, why in majors(obj):
            if not driver_runs(major, driver) and not optional_one:
                problems.append(f"{obj.path}: CUDA {major} ({why}) on driver {driver}")
        missing = [n for n, where in result.get("opens", {}).items() if where is None]
        core = [n for n in missing if n.split(".so")[0] in CORE_STEMS or n.startswith("CUDA ")]
        if core and obj.device and not optional_one:
            problems.append(f"{obj.path}: opens {core[0]}, nowhere")
    device = [o for o in objects if o.device]
    if device:
        reasons = [runs_on(o, cc, driver) for o in device]
        if all(r is not None for r in reasons):
            problems.append(f"no object runs on {machine.cc}: {reasons[0]}")
    return not problems, "; ".join(problems[:2]) or "runs"


def loaded_through(
    obj: Any, objects: Any, loaded: dict[str, Any], seen: frozenset[str] = frozenset()
) -> bool:
    """Whether an object that links ``obj`` (auditwheel's grafted ``pkg.libs/libx.so``), or
    one that links that, and so on, loaded with the real dlopen: Python never opens ``obj``
    alone, only through them."""
    name = obj.path.rsplit("/", 1)[-1]
    for other in objects:
        if other is obj or other.path in seen or name not in other.needed:
            continue
        if loaded["objects"].get(other.path, {}).get("load") == "ok":
            return True
        if loaded_through(other, objects, loaded, seen | {obj.path}):
            return True
    return False


CHILD = r"""
import ctypes, json, os, select, sys
spec = json.load(open(sys.argv[1]))
out = {"torch": None, "objects": {}}
if spec["torch"]:
    try:
        import torch
        out["torch"] = "ok"
    except BaseException as err:
        out["torch"] = f"{type(err).__name__}: {err}"[:300]
for obj in spec["objects"]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        res = {"opens": {}}
        try:
            ctypes.CDLL(obj["path"])
            res["load"] = "ok"
        except OSError as err:
            res["load"] = str(err)[:300]
        if res["load"] == "ok":
            for group in obj["opens"]:
                found = None
                for name in group:
                    for candidate in [name] + [os.path.join(d, name) for d in obj["dirs"]]:
                        try:
                            ctypes.CDLL(candidate)
                            found = candidate
                            break
                        except OSError:
                            pass
                    if found:
                        break
                res["opens"][group[0]] = found
            for label, dirs, names in obj["wheel_dirs"]:
                found = next((d for d in dirs if os.path.isdir(d) and os.listdir(d)), None)
                for name in names if found is None else []:
                    try:
                        ctypes.CDLL(name)
                        found = name
                        break
                    except OSError:
                        pass
                res["opens"][label] = found
        os.write(write, json.dumps(res).encode())
        os._exit(0)
    os.close(write)
    data, hung = b"", False
    while True:
        ready, _, _ = select.select([read], [], [], 120)
        if not ready:
            hung = True
            os.kill(pid, 9)
            break
        chunk = os.read(read, 65536)
        if not chunk:
            break
        data += chunk
    os.close(read)
    os.waitpid(pid, 0)
    # dlopen runs an object's constructors after every symbol is bound: one still running after
    # 120 s (cucim's, against the stub driver) has loaded
    hung_note = {"load": "ok", "note": "its constructor still ran after 120 s (killed)"}
    out["objects"][obj["rel"]] = hung_note if hung else json.loads(data or b"{}")
print("ORACLE " + json.dumps(out))
"""


def child_spec(package: Package, site: Path, extra_dirs: list[str]) -> dict[str, Any]:
    objects: list[dict[str, Any]] = []
    for obj in package.objects:
        path = site / obj.path
        origin = str(path.parent)
        dirs = [
            os.path.normpath(d.replace("$ORIGIN", origin).replace("${ORIGIN}", origin))
            for d in (obj.runpath or obj.rpath)
        ] + (extra_dirs if package.pathfinder else [])
        groups: dict[str, list[str]] = {}
        for name in obj.names if obj.dlopen else []:
            groups.setdefault(name.split(".so")[0], []).append(name)
        wheel_dirs: list[tuple[str, list[str], list[str]]] = []
        nvidia = [d for d in dirs if "/nvidia/" in d]
        if (
            obj.dlopen
            and (obj.device or obj.static_runtime)
            and nvidia
            and not [n for n in obj.names if not n.startswith("libcuda.")]
        ):
            # XLA's loader opens "libcublas.so.<major>" by name: its RPATH's directories first,
            # then the system's search (LD_LIBRARY_PATH, the default directories)
            major = next((m for m, _ in majors(obj)), None)
            names = [f"libcublas.so.{major}", f"libcudart.so.{major}"] if major else []
            wheel_dirs.append(("CUDA libraries (RPATH/RUNPATH nvidia dirs)", nvidia, names))
        objects.append(
            {
                "rel": obj.path,
                "path": str(path),
                "opens": [sorted(names, key=_versioned_first) for names in groups.values()],
                "dirs": dirs,
                "wheel_dirs": wheel_dirs,
            }
        )
    return {"torch": package.needs_torch, "objects": objects}


def _versioned_first(name: str) -> tuple[bool, str]:
    return name.endswith(".so"), name


def run_child(
    python: Path, spec: dict[str, Any], env: dict[str, str], scratch: Path
) -> dict[str, Any]:
    spec_file = scratch / "spec.json"
    spec_file.write_text(json.dumps(spec))
    child = scratch / "child.py"
    child.write_text(CHILD)
    argv = [
        "/lib64/ld-linux-x86-64.so.2",
        "--inhibit-cache",
        str(python),
        str(child),
        str(spec_file),
    ]
    try:
        done = subprocess.run(  # in scratch: libcufile writes cufile.log where it runs
            argv, capture_output=True, text=True, env=env, timeout=1800, check=False, cwd=scratch
        )
    except subprocess.TimeoutExpired:
        return {"torch": "child timed out after 1800 s", "objects": {}}
    said = next((text for text in done.stdout.splitlines() if text.startswith("ORACLE ")), None)
    if said is None:
        return {"torch": f"child failed: {done.stderr[-300:]}", "objects": {}}
    found: dict[str, Any] = json.loads(said[len("ORACLE ") :])
    return found
