"""What ``cuship doctor`` found: immutable facts per installed distribution, the verdict of each
check, and the problems with the command that fixes each."""

from __future__ import annotations

from typing import Any, Literal

from cuship._record import frozen
from cuship.judge.model import Check, GlibcVerdict, GpuRun, LibraryNeed, ObjectLoad, TorchVerdict
from cuship.judge.offer import Offer
from cuship.judge.ptx import reach
from cuship.wheel.audit import ObjectReport
from cuship.wheel.torchabi import TorchPin

# The judge's verdicts under the names doctor's reports have always used.
CudaLibrary = LibraryNeed
GlibcCheck = GlibcVerdict
TorchCheck = TorchVerdict

__all__ = [
    "Area",
    "CudaLibrary",
    "DoctorReport",
    "GlibcCheck",
    "GpuRun",
    "InstallOrigin",
    "InstalledPackage",
    "Machine",
    "PackageReport",
    "Problem",
    "Runs",
    "Skipped",
    "TorchCheck",
]

Area = Literal["files", "gpu", "cuda", "libraries", "torch", "glibc"]
Runs = Literal["sass", "ptx", "none"]


@frozen
class InstallOrigin:
    """Where an installed distribution came from, as far as its files say."""

    label: str | None = None  # the local version label of the installed version
    filename: str | None = None  # cuship.json: the prebuilt wheel the backend installed
    index: str | None = None  # cuship.json: the index it came from
    kind: str | None = None  # cuship.json: "prebuilt" or "source"
    variant: str | None = None  # cuship.json's label, else the local version label
    variant_from: str | None = None  # "cuship.json" or "local version label"
    url: str | None = None  # PEP 610 direct_url.json: installed from this file or URL

    def to_json(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "variant_from": self.variant_from,
            "label": self.label,
            "filename": self.filename,
            "index": self.index,
            "kind": self.kind,
            "url": self.url,
        }


@frozen
class InstalledPackage:
    """One installed distribution and its shared objects, as read from its files (no decisions)."""

    name: str
    version: str
    location: str  # the site directory holding its .dist-info
    objects: tuple[ObjectReport, ...]  # its ELF shared objects; paths as RECORD lists them
    tags: tuple[str, ...] = ()  # the Tag lines of its WHEEL file
    torch_requirement: TorchPin | None = None
    provenance: InstallOrigin = InstallOrigin()
    broken: tuple[str, ...] = ()  # a RECORD-listed shared object missing or unreadable: why
    notes: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()  # its Requires-Dist entries that install NVIDIA libraries
    shared: tuple[str, ...] = ()  # file names of every shared object its RECORD lists


@frozen
class Machine:
    """The facts of this machine the checks use."""

    gpus: tuple[tuple[str, str | None], ...]  # (name, compute capability)
    gpu_source: str
    driver_version: str | None
    driver_cuda: str | None
    torch: str | None
    torch_cxx11abi: bool | None
    glibc: str | None
    offer: Offer = Offer()  # the same machine as the judge sees it
    notes: tuple[str, ...] = ()  # what could not be read of it (the fingerprint's notes)

    @property
    def torch_build(self) -> str | None:
        """``torch 2.13.0+cpu (CPU)``: the installed torch and its build."""
        return None if self.offer.torch is None else self.offer.torch.described

    def to_json(self) -> dict[str, Any]:
        return {
            "gpus": [{"name": name, "cc": cc} for name, cc in self.gpus],
            "gpu_source": self.gpu_source,
            "driver_version": self.driver_version,
            "driver_cuda": self.driver_cuda,
            "torch": self.torch,
            "torch_cxx11abi": self.torch_cxx11abi,
            "torch_build": None if self.offer.torch is None else self.offer.torch.to_json(),
            "cuda_libraries": (
                None if self.offer.libraries is None else self.offer.libraries.to_json()
            ),
            "glibc": self.glibc,
            "notes": list(self.notes),
            "loader": None if self.offer.loader is None else self.offer.loader.to_json(),
        }


@frozen
class Problem:
    """One thing that fails on this machine, the error a user meets, and what to run."""

    area: Area
    message: str
    fix: str

    def to_json(self) -> dict[str, Any]:
        return {"area": self.area, "message": self.message, "fix": self.fix}


@frozen
class PackageReport:
    """Every check of one distribution; ``problems`` is empty when it should work here."""

    name: str
    version: str
    location: str
    provenance: InstallOrigin
    objects: tuple[str, ...]
    sass: tuple[str, ...]
    ptx: tuple[str, ...]
    gpus: tuple[GpuRun, ...]
    libraries: tuple[CudaLibrary, ...]
    torch: TorchCheck
    glibc: GlibcCheck
    problems: tuple[Problem, ...] = ()
    notes: tuple[str, ...] = ()
    checks: tuple[Check, ...] = ()  # every check the judge made, passed or not
    unchecked: tuple[str, ...] = ()  # the checks that could not run, and why
    loads: tuple[ObjectLoad, ...] = ()  # each own object, loaded as ld.so would load it here

    @property
    def complete(self) -> bool:
        """Every check ran (no problem then means every check passed)."""
        return not self.unchecked

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "location": self.location,
            "provenance": self.provenance.to_json(),
            "objects": list(self.objects),
            "sass": list(self.sass),
            "ptx": list(self.ptx),
            "ptx_reach": [reach(sm).to_json() for sm in self.ptx],
            "gpus": [g.to_json() for g in self.gpus],
            "cuda_libraries": [lib.to_json() for lib in self.libraries],
            "torch": self.torch.to_json(),
            "glibc": self.glibc.to_json(),
            "problems": [p.to_json() for p in self.problems],
            "notes": list(self.notes),
            "unchecked": list(self.unchecked),
            "checks": [c.to_json() for c in self.checks],
            "loads": [load.to_json() for load in self.loads],
        }


@frozen
class Skipped:
    """A distribution that was looked at and not checked, and why."""

    name: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "reason": self.reason}


@frozen
class DoctorReport:
    """The whole run: this machine, each distribution checked, those passed over."""

    machine: Machine
    packages: tuple[PackageReport, ...]
    skipped: tuple[Skipped, ...] = ()
    scanned: int = 0  # distributions looked at
    seconds: float = 0.0

    @property
    def problems(self) -> tuple[Problem, ...]:
        return tuple(p for package in self.packages for p in package.problems)

    @property
    def exit_code(self) -> int:
        """1 when something will fail here, else 0."""
        return 1 if self.problems else 0

    @property
    def unchecked(self) -> tuple[str, ...]:
        """``name: why`` for every check that could not run."""
        return tuple(f"{p.name}: {line}" for p in self.packages for line in p.unchecked)

    def to_json(self) -> dict[str, Any]:
        return {
            "machine": self.machine.to_json(),
            "packages": [p.to_json() for p in self.packages],
            "skipped": [s.to_json() for s in self.skipped],
            "scanned": self.scanned,
            "problems": len(self.problems),
            "unchecked": list(self.unchecked),
            "seconds": round(self.seconds, 3),
            "exit_code": self.exit_code,
        }
