"""``cuship check --force-ptx``: run the compiled extension's kernels from its PTX.

Wheels carry PTX so that GPUs newer than their SASS list can run them; nothing runs that code on
a GPU the SASS covers. Under ``CUDA_FORCE_PTX_JIT=1`` the driver ignores every SASS image and
JIT-compiles the embedded PTX instead, so a kernel whose PTX path differs from its SASS path (an
``#if __CUDA_ARCH__`` branch wrong only for the PTX target) fails its check. A kernel with no PTX
the GPU can JIT fails at launch with ``no kernel image is available for execution on the
device``; so before the run, the shared objects of the project's imported packages are
inspected against each GPU's compute capability (:func:`decide`), and a run that could only fail
that way is refused (:func:`require_jit`, exit 3 naming the object and the fix).

Only the ``cuda`` engine runs forced: see :data:`FORCED_SKIPS` for why the others do not.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cuship.arch import cc_tuple, sm_key
from cuship.errors import InputError, ToolMissing
from cuship.judge.ptx import jit_arch
from cuship.provenance import Provenance
from cuship.wheel.audit import ObjectReport, scan_object

__all__ = [
    "FORCED_ENGINES",
    "FORCED_SKIPS",
    "JitTarget",
    "PtxGate",
    "decide",
    "package_objects",
    "require_jit",
]

FORCED_ENGINES: tuple[str, ...] = ("cuda",)
_PLAIN_RUN = "the plain run checks it"
# Why an engine's groups are skipped in a forced-PTX run (docs/kernel-checks.md says more).
FORCED_SKIPS: Mapping[str, str] = {
    "native": f"runs on the CPU: nothing to JIT ({_PLAIN_RUN})",
    "triton": "Triton loads cubins it compiles itself, without PTX, beside torch's kernels: a "
    f"forced run would not test the extension's PTX ({_PLAIN_RUN})",
    "numba": "Numba's kernels are PTX JIT-compiled on every run: forcing changes nothing "
    f"({_PLAIN_RUN})",
}
NO_KERNEL = "no kernel image is available for execution on the device"


@dataclass(frozen=True, slots=True, kw_only=True)
class JitTarget:
    """One GPU and one shared object with device code: the PTX the driver will JIT, if any."""

    gpu: str
    cc: str | None  # None: the GPU's compute capability is unknown
    path: str
    sass: tuple[str, ...]
    ptx: tuple[str, ...]
    arch: str | None  # the PTX it JITs ("80"); None: none it can (or cc unknown)

    def line(self) -> str:
        where = f"{self.gpu} ({self.cc or '?'})"
        if self.cc is None:
            return f"{where}: compute capability unknown; the PTX of {self.path} was not checked"
        if self.arch is None:
            return f"{where}: no PTX in {self.path} it can JIT (PTX: {_ptx_list(self.ptx)})"
        return f"{where} JIT-compiles compute_{self.arch} of {self.path}"


@dataclass(frozen=True, slots=True, kw_only=True)
class PtxGate:
    """Every (GPU, object with device code) pair of a forced-PTX run, decided."""

    targets: tuple[JitTarget, ...]
    looked_in: tuple[str, ...] = ()  # the package directories searched for shared objects

    @property
    def blocked(self) -> tuple[JitTarget, ...]:
        """Pairs whose GPU is known and can JIT none of the object's PTX."""
        return tuple(t for t in self.targets if t.cc is not None and t.arch is None)

    def lines(self) -> tuple[str, ...]:
        return tuple(t.line() for t in self.targets)


def decide(
    objects: Sequence[ObjectReport],
    gpus: Iterable[tuple[str, str | None]],
    *,
    looked_in: Sequence[str] = (),
) -> PtxGate:
    """For each GPU (name, compute capability) and each object with device code, the PTX the
    driver will JIT under ``CUDA_FORCE_PTX_JIT=1`` (pure)."""
    device = [o for o in objects if o.sass or o.ptx]
    targets = tuple(
        JitTarget(
            gpu=name,
            cc=cc,
            path=obj.path,
            sass=obj.sass,
            ptx=obj.ptx,
            arch=None if cc is None else jit_arch(cc, obj.ptx),
        )
        for name, cc in dict.fromkeys(gpus)
        for obj in device
    )
    return PtxGate(targets=targets, looked_in=tuple(looked_in))


def _ptx_list(ptx: Sequence[str]) -> str:
    return ", ".join(f"compute_{p}" for p in ptx) or "none"


def _suggestion(target: JitTarget) -> str:
    """The arch to add ``+PTX`` to: the object's oldest plain SASS arch the GPU runs, else the
    GPU's own compute capability."""
    assert target.cc is not None
    major, minor = cc_tuple(target.cc)
    gpu = major * 10 + minor
    older = sorted((s for s in target.sass if s.isdigit() and int(s) <= gpu), key=sm_key)
    number = int(older[0]) if older else gpu
    return f"{number // 10}.{number % 10}"


def require_jit(gate: PtxGate) -> None:
    """:class:`ToolMissing` (exit 3) when a forced-PTX run could only fail at launch: no object
    with device code was found, or a GPU can JIT none of an object's PTX."""
    if not gate.targets:
        where = ", ".join(repr(d) for d in gate.looked_in) or "no project package was traced"
        raise ToolMissing(
            f"--force-ptx: no shared object with CUDA device code in the project's packages "
            f"({where}): there is no PTX to run",
            hint="name the packages that hold the compiled extension in [check] packages, and "
            "check that the installed build is imported (see the 'package:' lines)",
        )
    blocked = gate.blocked
    if not blocked:
        return
    first = blocked[0]
    more = f" (and {len(blocked) - 1} more GPU/object pairs)" if len(blocked) > 1 else ""
    arch = _suggestion(first)
    raise ToolMissing(
        f"--force-ptx: {first.path} has no PTX that {first.gpu} (compute capability "
        f"{first.cc}) can JIT (PTX: {_ptx_list(first.ptx)}; SASS: "
        f"{', '.join(f'sm_{s}' for s in first.sass) or 'none'}){more}: under "
        f"CUDA_FORCE_PTX_JIT=1 its kernels would fail with {NO_KERNEL!r}",
        hint=f"add +PTX to an arch <= {first.cc} in [matrix] arch, e.g. {arch}+PTX (nvcc: "
        f"-gencode arch=compute_{arch.replace('.', '')},code=compute_{arch.replace('.', '')}), "
        "and rebuild; plain PTX runs on every GPU of that compute capability or newer",
    )


def _shared_files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    return sorted(
        p
        for p in root.rglob("*.so*")
        if "__pycache__" not in p.parts and p.is_file() and (p.suffix == ".so" or ".so." in p.name)
    )


def package_objects(
    provenance: Provenance | None,
) -> tuple[tuple[ObjectReport, ...], tuple[str, ...]]:
    """(every ELF shared object under the traced packages, the directories searched): the
    extension modules and the libraries they load with ctypes alike (reads the files)."""
    if provenance is None:
        return (), ()
    roots = [Path(p.directory) for p in provenance.packages]
    roots += [Path(e.path) for p in provenance.packages for e in p.extensions]
    seen: dict[str, ObjectReport] = {}
    for root in roots:
        for path in _shared_files(root):
            real = os.path.realpath(path)
            if real in seen:
                continue
            try:
                report = scan_object(path, symbols=False)
            except InputError:  # cut short, or no regular file: nothing a GPU could load
                continue
            if report is not None:
                seen[real] = report
    return tuple(seen.values()), tuple(dict.fromkeys(str(p.directory) for p in provenance.packages))
