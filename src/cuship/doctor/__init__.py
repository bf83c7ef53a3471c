"""``cuship doctor``: why an installed CUDA package will not run here, and what fixes it.

For each installed distribution with ELF shared objects (or the ones named): its variant (the
local version label, or the ``cuship.json`` provenance the backend wrote), its SASS/PTX against
every GPU, the CUDA libraries it needs against the driver and where each comes from, the build
and release of torch it needs against the installed torch, and its wheel's glibc tag against
this system. Works for any wheel, built by cuship or not: nothing is imported, only files are
read (:mod:`cuship.doctor.scan`); the decisions are the one judge's (:mod:`cuship.judge`, the
same that resolve and install use), put in doctor's words by :mod:`cuship.doctor.judge`.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from cuship.compat import Compat, load
from cuship.doctor.judge import judge_installed
from cuship.doctor.model import (
    CudaLibrary,
    DoctorReport,
    GlibcCheck,
    GpuRun,
    InstalledPackage,
    InstallOrigin,
    Machine,
    PackageReport,
    Problem,
    Skipped,
    TorchCheck,
)
from cuship.doctor.scan import scan
from cuship.errors import CushipError, NothingToDo
from cuship.judge.offer import offer_of
from cuship.machine import Fingerprint, fingerprint

__all__ = [
    "CudaLibrary",
    "DoctorReport",
    "GlibcCheck",
    "GpuRun",
    "InstallOrigin",
    "InstalledPackage",
    "Machine",
    "PackageReport",
    "Problem",
    "Skipped",
    "TorchCheck",
    "demangler",
    "diagnose",
    "judge_installed",
    "machine_of",
    "scan",
]


def machine_of(fp: Fingerprint) -> Machine:
    """The facts of a fingerprint that the checks use."""
    return Machine(
        offer=offer_of(fp),
        gpus=tuple((gpu.name, gpu.cc) for gpu in fp.gpus),
        gpu_source=fp.gpu_source,
        driver_version=fp.driver_version,
        driver_cuda=fp.driver_cuda,
        torch=fp.torch.version if fp.torch is not None else None,
        torch_cxx11abi=fp.torch.cxx11abi if fp.torch is not None else None,
        glibc=fp.glibc,
        notes=fp.notes,
    )


def demangler() -> Callable[[Sequence[str]], Sequence[str]] | None:
    """Readable C++ names through binutils' ``c++filt`` (one process for a batch of names);
    None when it is not installed (names are then shown mangled, and said so)."""
    tool = shutil.which("c++filt")
    if tool is None:
        return None

    def demangle(names: Sequence[str]) -> Sequence[str]:
        from cuship import process

        try:
            done = process.run([tool], input="\n".join(names) + "\n", timeout=30)
        except CushipError:
            return list(names)
        lines = done.stdout.splitlines()
        return lines if done.ok and len(lines) == len(names) else list(names)

    return demangle


def diagnose(
    names: Sequence[str] = (),
    *,
    paths: Sequence[str | Path] | None = None,
    environ: Mapping[str, str] | None = None,
    machine: Fingerprint | None = None,
    compat: Compat | None = None,
    demangle: Callable[[Sequence[str]], Sequence[str]] | None = None,
) -> DoctorReport:
    """Check the distributions ``names`` (default: every one with shared objects) installed on
    ``paths`` (default: this interpreter's ``sys.path``) for this machine (``machine``, else the
    fingerprint of ``environ``: ``CUSHIP_GPUS`` and friends fake one).

    A name that is not installed is a :class:`~cuship.errors.UsageError`; nothing with compiled
    code to check is :class:`~cuship.errors.NothingToDo`. ``demangle``: turns the undefined
    C++ symbols it names readable (:func:`demangler`); None leaves them mangled.
    """
    start = time.perf_counter()
    found = scan(names, paths=paths)
    sites = None if paths is None else [str(p) for p in paths]
    fp = machine if machine is not None else fingerprint(environ, toolkit=False, site_dirs=sites)
    facts = machine_of(fp)
    data = compat or load()
    packages = tuple(judge_installed(package, facts, data, demangle) for package in found.packages)
    if not packages:
        detail = "; ".join(f"{s.name}: {s.reason}" for s in found.skipped)
        raise NothingToDo(
            f"no installed distribution with compiled code to check (looked at {found.scanned})"
            + (f": {detail}" if detail else ""),
            hint="name a package that has compiled extensions, or run it in the environment "
            "that has them",
        )
    return DoctorReport(
        machine=facts,
        packages=packages,
        skipped=found.skipped,
        scanned=found.scanned,
        seconds=time.perf_counter() - start,
    )
