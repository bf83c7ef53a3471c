"""Decide, from what an installed distribution carries and what this machine is, what will fail
and how to fix it (pure). The GPU and driver rules are the resolver's
(:mod:`cuship.resolve._gpu`); each problem quotes the error a user would meet.

- **gpu**: every GPU against the SASS and PTX of each shared object with device code: native,
  JIT from PTX, or nothing (``no kernel image is available for execution on the device``).
- **cuda**: each CUDA library needed (DT_NEEDED) whose SONAME names a CUDA major, against the
  driver (``CUDA driver version is insufficient for CUDA runtime version``); PTX that a GPU must
  JIT needs the driver of the toolkit minor that made it, when the variant names it.
- **torch** and **glibc** (:mod:`cuship.doctor.abi`): the ABI of the objects against the
  installed torch (``undefined symbol: _ZN3c10…``), the manylinux tag against this glibc.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from packaging.version import Version

from cuship.compat import Compat
from cuship.compat.models import format_driver
from cuship.doctor import fixes
from cuship.doctor.abi import glibc_check, torch_check
from cuship.doctor.model import (
    CudaLibrary,
    GpuRun,
    InstalledPackage,
    Machine,
    PackageReport,
    Problem,
    Runs,
)
from cuship.errors import CushipError
from cuship.resolve._gpu import driver_runs, gpu_coverage
from cuship.wheel.audit import ObjectReport, sm_key
from cuship.wheel.cudalibs import cuda_major_of
from cuship.wheel.names import Variant, parse_label

__all__ = ["judge"]

NO_KERNEL = "no kernel image is available for execution on the device"
DRIVER_TOO_OLD = "CUDA driver version is insufficient for CUDA runtime version"
PTX_TOO_NEW = "the provided PTX was compiled with an unsupported toolchain"


def judge(package: InstalledPackage, machine: Machine, compat: Compat) -> PackageReport:
    """Every check of ``package`` on ``machine``; problems carry their fix."""
    variant = _variant(package)
    problems = [
        Problem(area="files", message=line, fix=fixes.reinstall_same(package))
        for line in package.broken
    ]
    notes = list(package.notes)
    gpus = _gpus(package, machine, problems, notes)
    libraries = _libraries(package, machine, compat, problems, notes)
    _jit_driver(package, machine, compat, variant, gpus, problems)
    torch = torch_check(package, machine, variant, problems)
    glibc = glibc_check(package, machine, problems, notes)
    return PackageReport(
        name=package.name,
        version=package.version,
        location=package.location,
        provenance=package.provenance,
        objects=tuple(o.path for o in package.objects),
        sass=_union(o.sass for o in package.objects),
        ptx=_union(o.ptx for o in package.objects),
        gpus=gpus,
        libraries=libraries,
        torch=torch,
        glibc=glibc,
        problems=tuple(problems),
        notes=tuple(notes),
    )


def _union(groups: Iterable[tuple[str, ...]]) -> tuple[str, ...]:
    return tuple(sorted({sm for group in groups for sm in group}, key=sm_key))


def _variant(package: InstalledPackage) -> Variant | None:
    label = package.provenance.variant
    if not label:
        return None
    try:
        return parse_label(label)
    except CushipError:  # a label in a spelling cuship cannot read: nothing follows from it
        return None


def _which(paths: Sequence[str], limit: int = 2) -> str:
    shown = ", ".join(paths[:limit])
    return shown + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


def _device_code(objects: Sequence[ObjectReport]) -> str:
    sass = [f"sm_{s}" for s in _union(o.sass for o in objects)]
    ptx = [f"compute_{p}" for p in _union(o.ptx for o in objects)]
    return ", ".join(sass + ptx) or "none"


# --- gpu -------------------------------------------------------------------------------------


def _gpus(
    package: InstalledPackage, machine: Machine, problems: list[Problem], notes: list[str]
) -> tuple[GpuRun, ...]:
    device = [o for o in package.objects if o.sass or o.ptx]
    if not device:
        return ()
    if not machine.gpus:
        notes.append(
            f"no GPU here: its device code ({_device_code(device)}) installs but cannot run"
        )
        return ()
    runs = []
    for name, cc in dict.fromkeys(machine.gpus):
        if cc is None:
            notes.append(f"{name}: compute capability unknown; its device code was not checked")
            continue
        run = _gpu_run(name, cc, device)
        runs.append(run)
        if run.runs == "none":
            lacking = [o for o in device if o.path in run.objects]
            sm = cc.replace(".", "")
            problems.append(
                Problem(
                    area="gpu",
                    message=f"{name} ({cc}): {_which(run.objects)} "
                    + ("carries" if len(lacking) == 1 else "carry")
                    + f" no SASS or PTX it can run ({'it has' if len(lacking) == 1 else 'they have'} "
                    f"{_device_code(lacking)}): {NO_KERNEL!r}",
                    fix=fixes.reinstall(
                        package, f"that has SASS for sm_{sm} (or PTX <= compute_{sm})"
                    ),
                )
            )
    return tuple(runs)


def _gpu_run(name: str, cc: str, device: Sequence[ObjectReport]) -> GpuRun:
    lacking, jit, used = [], [], set()
    for obj in device:
        kind, arch = gpu_coverage(cc, obj.sass, obj.ptx)
        if kind is None:
            lacking.append(obj.path)
        elif kind == "ptx":
            jit.append(obj.path)
            used.add(f"compute_{arch}")
        else:
            used.add(f"sm_{arch}")
    runs: Runs = "none" if lacking else ("ptx" if jit else "sass")
    arches = tuple(sorted(used, key=lambda a: sm_key(a.partition("_")[2])))
    return GpuRun(gpu=name, cc=cc, runs=runs, arches=arches, objects=tuple(lacking or jit))


# --- cuda ------------------------------------------------------------------------------------


def _driver_text(machine: Machine) -> str:
    if machine.driver and machine.driver_cuda:
        return f"driver {machine.driver} runs CUDA {machine.driver_cuda} at most"
    if machine.driver:
        return f"driver {machine.driver} is too old"
    return f"the driver runs CUDA {machine.driver_cuda} at most"


def _family_minimum(compat: Compat, major: int) -> str | None:
    try:
        toolkit = compat.cuda(str(major))
    except CushipError:
        return None
    return format_driver(toolkit.family_min_driver_linux)


def _libraries(
    package: InstalledPackage,
    machine: Machine,
    compat: Compat,
    problems: list[Problem],
    notes: list[str],
) -> tuple[CudaLibrary, ...]:
    needed = dict.fromkeys(lib for o in package.objects for lib in o.needed)
    found = []
    for soname in needed:
        major = cuda_major_of(soname)
        if major is None:
            continue
        runs = driver_runs(
            Version(str(major)),
            driver=machine.driver,
            driver_cuda=machine.driver_cuda,
            jit=False,
            compat=compat,
        )
        found.append(CudaLibrary(soname=soname, cuda_major=major, runs=runs))
    # Objects for several CUDA majors side by side (cu12/ and cu13/): the package loads the one
    # this driver runs, so only a package of which nothing runs has a problem.
    some_run = any(lib.runs for lib in found) and len({lib.cuda_major for lib in found}) > 1
    for lib in (lib for lib in found if lib.runs is False):
        text = f"needs {lib.soname} (CUDA {lib.cuda_major}); {_driver_text(machine)}"
        if some_run:
            notes.append(f"{text}; it also has objects for a CUDA this driver runs")
            continue
        problems.append(
            Problem(
                area="cuda",
                message=f"{text}: {DRIVER_TOO_OLD!r}",
                fix=f"{fixes.driver_upgrade(_family_minimum(compat, lib.cuda_major), lib.cuda_major)}"
                + ", or "
                + fixes.reinstall(package, f"for CUDA {_driver_major(machine)}"),
            )
        )
    if found and machine.driver is None and machine.driver_cuda is None:
        where = "no NVIDIA driver here" if not machine.gpus else "the driver version is unknown"
        notes.append(f"{where}: the CUDA {found[0].cuda_major} libraries it needs were not checked")
    return tuple(found)


def _driver_major(machine: Machine) -> str:
    return machine.driver_cuda.split(".")[0] if machine.driver_cuda else "this driver runs"


def _jit_driver(
    package: InstalledPackage,
    machine: Machine,
    compat: Compat,
    variant: Variant | None,
    gpus: Sequence[GpuRun],
    problems: list[Problem],
) -> None:
    """PTX compiled by the driver needs a driver of the toolkit minor that made it."""
    cuda = variant.cuda if variant is not None else None
    jit = [run for run in gpus if run.runs == "ptx"]
    if cuda is None or len(cuda.release) < 2 or not jit:
        return
    runs = driver_runs(
        cuda, driver=machine.driver, driver_cuda=machine.driver_cuda, jit=True, compat=compat
    )
    if runs is not False:
        return
    try:
        minimum: str | None = format_driver(
            compat.cuda(f"{cuda.major}.{cuda.minor}").min_driver_linux
        )
    except CushipError:
        minimum = None
    for run in jit:
        sm = run.cc.replace(".", "")
        need = f"{minimum} or newer" if minimum else f"one that runs CUDA {cuda}"
        problems.append(
            Problem(
                area="cuda",
                message=f"{run.gpu} ({run.cc}) must JIT {', '.join(run.arches)} made by CUDA "
                f"{cuda}; {_driver_text(machine)}: {PTX_TOO_NEW!r}",
                fix=f"upgrade the NVIDIA driver to {need}, or "
                + fixes.reinstall(package, f"that has SASS for sm_{sm}"),
            )
        )
