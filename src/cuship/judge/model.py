"""The judge's verdict: each check with its status, the error a user would meet and the fix, and
the facts behind them (how each GPU runs the code, where each library comes from, torch)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from cuship._record import frozen

__all__ = [
    "CANNOT_OPEN",
    "DRIVER_TOO_OLD",
    "NO_KERNEL",
    "PTX_TOO_NEW",
    "Area",
    "Check",
    "Coverage",
    "GlibcVerdict",
    "GpuRun",
    "Judgement",
    "LibraryNeed",
    "ObjectLoad",
    "Runs",
    "Status",
    "TorchVerdict",
    "which",
]

# The errors users meet, as the CUDA runtime, the driver and ld.so word them.
NO_KERNEL = "no kernel image is available for execution on the device"
DRIVER_TOO_OLD = "CUDA driver version is insufficient for CUDA runtime version"
PTX_TOO_NEW = "the provided PTX was compiled with an unsupported toolchain"
CANNOT_OPEN = "cannot open shared object file: No such file or directory"


def which(paths: Sequence[str], limit: int = 2) -> str:
    """``a, b and 3 more``: the first ``limit`` of ``paths``, and how many are left."""
    shown = ", ".join(paths[:limit])
    return shown + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


Area = Literal["files", "gpu", "cuda", "libraries", "torch", "glibc"]
Status = Literal["pass", "fail", "partial", "unchecked"]
Runs = Literal["sass", "ptx", "none"]
Coverage = Literal["sass", "ptx", "none", "cpu", "no-gpu", "unknown"]


@frozen
class Check:
    """One check: ``pass``; ``fail`` (``message`` says what fails, ``fix`` what fixes it);
    ``partial`` (it works, with the caveat in ``message``); ``unchecked`` (it could not run)."""

    area: Area
    status: Status
    message: str
    fix: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"area": self.area, "status": self.status, "message": self.message, "fix": self.fix}


@frozen
class GpuRun:
    """How one GPU runs the package's own device code: native SASS, PTX by JIT, or not at all.
    ``objects``: those that need JIT (``ptx``) or have nothing (``none``); ``partial``: its
    own objects with nothing for this GPU beside others that run (arch-specific extras)."""

    gpu: str
    cc: str
    runs: Runs
    arches: tuple[str, ...] = ()  # what it runs: "sm_90", "compute_80"
    objects: tuple[str, ...] = ()
    partial: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu,
            "cc": self.cc,
            "runs": self.runs,
            "arches": list(self.arches),
            "objects": list(self.objects),
            "partial": list(self.partial),
        }


@frozen
class LibraryNeed:
    """An NVIDIA library the objects need, where it comes from here, and whether the driver runs
    the CUDA major its SONAME names. ``source`` None: from nowhere (``cannot open shared object
    file``); ``runs`` None: the driver is unknown or the SONAME names no CUDA major."""

    soname: str
    objects: tuple[str, ...]
    cuda_major: int | None = None
    source: str | None = None
    runs: bool | None = None
    judged: bool = True  # False: needed only by objects for another CUDA, not loaded here

    def to_json(self) -> dict[str, Any]:
        return {
            "soname": self.soname,
            "objects": list(self.objects),
            "cuda_major": self.cuda_major,
            "source": self.source,
            "runs": self.runs,
            "judged": self.judged,
        }


@frozen
class ObjectLoad:
    """One own object loaded as ``dlopen(RTLD_NOW)`` would load it here (after the interpreter
    and, for a package that loads with torch, torch): ``loads`` True, False, or None when it
    could not be decided (``unchecked`` says what); ``optional``: why the object is optional
    (:mod:`cuship.judge.roles`), empty for a main one."""

    path: str
    loads: bool | None
    optional: str = ""
    libraries: tuple[tuple[str, str], ...] = ()  # (name, where it was found and how)
    missing: tuple[str, ...] = ()  # libraries from nowhere
    versions: tuple[str, ...] = ()  # "libc.so.6: version `GLIBC_2.38' not found (...)"
    unbound: tuple[str, ...] = ()  # the first undefined symbols, demangled where possible
    unbound_count: int = 0
    expected: str = ""  # the library expected to define the first of them
    opens: tuple[tuple[str, str | None], ...] = ()  # names it opens: where, None: nowhere
    unchecked: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "loads": self.loads,
            "optional": self.optional,
            "libraries": {name: where for name, where in self.libraries},
            "missing": list(self.missing),
            "versions": list(self.versions),
            "unbound": list(self.unbound),
            "unbound_count": self.unbound_count,
            "expected": self.expected,
            "opens": {name: where for name, where in self.opens},
            "unchecked": list(self.unchecked),
        }


@frozen
class TorchVerdict:
    """The objects' torch needs against the installed torch."""

    abi: str = "none"
    flavour: str | None = None  # the build it needs: "cuda", "rocm", "xpu"; None: any
    cuda_major: int | None = None  # the CUDA major of torch it needs (from libcudart.so.N)
    built: str | None = None  # the torch X.Y it was built for
    built_from: str | None = None  # "local version label" or "Requires-Dist"
    installed: str | None = None  # "torch 2.13.0+cpu (CPU)"
    ok: bool | None = None  # None: not decidable, or nothing to check
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "abi": self.abi,
            "flavour": self.flavour,
            "cuda_major": self.cuda_major,
            "built": self.built,
            "built_from": self.built_from,
            "installed": self.installed,
            "ok": self.ok,
            "reason": self.reason,
        }


@frozen
class GlibcVerdict:
    """The glibc the wheel's platform tag promises to need against this system's."""

    tag: str | None = None
    needed: str | None = None
    system: str | None = None
    ok: bool | None = None

    def to_json(self) -> dict[str, Any]:
        return {"tag": self.tag, "needed": self.needed, "system": self.system, "ok": self.ok}


@frozen
class Judgement:
    """Every check of one wheel on one machine, and the facts behind them."""

    checks: tuple[Check, ...]
    gpus: tuple[GpuRun, ...] = ()
    libraries: tuple[LibraryNeed, ...] = ()
    torch: TorchVerdict = TorchVerdict()
    glibc: GlibcVerdict = GlibcVerdict()
    coverage: Coverage = "cpu"
    cuda_major: int | None = None  # the CUDA whose objects load here, among several
    loads: tuple[ObjectLoad, ...] = ()  # each installed own object, loaded as ld.so would

    @property
    def failures(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.status == "fail")

    @property
    def fits(self) -> bool:
        """No check failed (some may not have run: see :attr:`complete`)."""
        return not self.failures

    @property
    def complete(self) -> bool:
        """Every check ran."""
        return all(c.status != "unchecked" for c in self.checks)

    @property
    def caveats(self) -> tuple[Check, ...]:
        """What works with a caveat, and what could not be checked."""
        return tuple(c for c in self.checks if c.status in ("partial", "unchecked"))

    @property
    def first_failure(self) -> Check | None:
        return next(iter(self.failures), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "fits": self.fits,
            "complete": self.complete,
            "coverage": self.coverage,
            "cuda_major": self.cuda_major,
            "checks": [c.to_json() for c in self.checks],
            "gpus": [g.to_json() for g in self.gpus],
            "libraries": [lib.to_json() for lib in self.libraries],
            "torch": self.torch.to_json(),
            "glibc": self.glibc.to_json(),
            "loads": [load.to_json() for load in self.loads],
        }
