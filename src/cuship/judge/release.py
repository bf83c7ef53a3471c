"""The CUDA release a shared object needs, read from the object (pure): the majors the driver
must run, and the PTX ISA version a GPU must JIT.

Read, strongest first:

- a library it links whose SONAME names the major (``libcudart.so.12``);
- one it opens itself at run time (``libcublas.so.12`` in the strings of an object importing
  ``dlopen``), when it names a single major;
- the NVIDIA wheel directory its DT_RPATH/DT_RUNPATH names (``$ORIGIN/../nvidia/cu13/lib``:
  CUDA 13 wheels);
- its device code, when no runtime library is linked (a runtime linked statically, or the
  driver API alone): the toolkit that made it, from its cubins' ``Cuda compilation tools,
  release 12.9`` or its PTX ISA version (``data/ptx.toml``: 8.7 is CUDA 12.8).

A cubin or a static runtime of CUDA X.Y runs on a driver of major X's family (minor-version
compatibility); PTX of ISA I is JIT-compiled only by a driver whose CUDA release knows I.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from cuship.compat import Compat
from cuship.compat.models import format_driver
from cuship.errors import CushipError
from cuship.judge import fixes
from cuship.judge.gpu import driver_runs
from cuship.judge.model import DRIVER_TOO_OLD, PTX_TOO_NEW, GpuRun, Status
from cuship.judge.needs import ObjectNeeds
from cuship.judge.roles import optional_reason
from cuship.judge.state import Judging
from cuship.wheel.cudalibs import cuda_major_of, is_nvidia_lib, library_stem

__all__ = ["Need", "cuda", "jit_driver", "made_by", "majors_needed", "newest_isa"]

_WHEEL_DIR = re.compile(r"nvidia/cu(\d{2})(?:/|$)")


@dataclass(frozen=True, slots=True)
class Need:
    """A CUDA major an object needs, and why (in words)."""

    major: int
    why: str


def newest_isa(obj: ObjectNeeds) -> Version | None:
    """The newest PTX ISA version among its PTX, None when it has none known."""
    found = []
    for isa in obj.ptx_isa:
        try:
            found.append(Version(isa))
        except InvalidVersion:
            continue
    return max(found, default=None)


def made_by(obj: ObjectNeeds, compat: Compat) -> tuple[Version, str] | None:
    """The CUDA release that made its device code, and the evidence: its cubins' toolkit
    string, else its PTX ISA version."""
    if obj.toolkit is not None:
        try:
            return Version(obj.toolkit), f"its cubins say CUDA {obj.toolkit}"
        except InvalidVersion:
            pass
    isa = newest_isa(obj)
    if isa is not None:
        cuda = compat.cuda_of_isa(str(isa))
        if cuda is not None:
            return cuda, f"its PTX is ISA {isa}, from CUDA {cuda}"
    return None


def majors_needed(obj: ObjectNeeds, compat: Compat) -> list[Need]:
    """Every CUDA major ``obj`` needs the driver to run, with why; the first is the strongest."""
    needs = [
        Need(major, f"needs {lib} (CUDA {major})")
        for lib in obj.libraries
        if (major := cuda_major_of(lib)) is not None
    ]
    needs += _opened(obj)
    for entry in (*obj.runpath, *obj.rpath):
        match = _WHEEL_DIR.search(entry)
        if match:
            major = int(match[1])
            needs.append(Need(major, f"looks for CUDA {major}'s libraries in {entry}"))
            break
    if not any(cuda_major_of(lib) is not None for lib in obj.libraries) and (
        obj.device or obj.static_runtime
    ):
        release = made_by(obj, compat)
        if release is not None:
            version, why = release
            what = "links a CUDA runtime statically" if obj.static_runtime else "has device code"
            needs.append(Need(version.major, f"{what} of CUDA {version} ({why})"))
    return needs


def _opened(obj: ObjectNeeds) -> list[Need]:
    """The majors of the CUDA libraries it opens at run time, where it names one major only
    for each library (cudnn-frontend names libcudart.so.12 and .so.13: either will do)."""
    by_stem: dict[str, set[int]] = {}
    for name in obj.opens or ():
        major = cuda_major_of(name)
        if major is not None and is_nvidia_lib(name):
            by_stem.setdefault(library_stem(name), set()).add(major)
    return [
        Need(next(iter(majors)), f"opens {stem}.so.{next(iter(majors))} at run time")
        for stem, majors in sorted(by_stem.items())
        if len(majors) == 1
    ]


# --- the checks -----------------------------------------------------------------------------


def _cuda_needs(j: Judging) -> dict[int, tuple[str, bool]]:
    """CUDA major -> (why, whether a main object needs it), from the objects that load here;
    with none, the CUDA the label names."""
    found: dict[int, tuple[str, bool]] = {}
    own = j.needs.own
    for obj in j.objects:
        main = obj.role == "vendor" or optional_reason(obj, own) is None
        for need in majors_needed(obj, j.compat):
            why = need.why if obj.role == "vendor" or len(own) == 1 else f"{obj.path} {need.why}"
            known = found.get(need.major)
            if known is None or (main and not known[1]):
                found[need.major] = (why, main)
    label = j.needs.label_cuda
    if not found and label:
        major = int(Version(label).major)
        found[major] = (
            f"built for CUDA {label} (its label; it links no CUDA runtime library)",
            True,
        )
    return dict(sorted(found.items()))


def cuda(j: Judging) -> None:
    """Each CUDA major the objects need against the driver (minor-version compatibility)."""
    needs = _cuda_needs(j)
    if not needs:
        return
    first = next(iter(needs))
    if not j.offer.gpus:
        if not j.offer.has_driver:
            j.add(
                "cuda",
                "partial",
                f"no NVIDIA driver here: the CUDA {first} it needs was not checked against one",
            )
        return
    if j.offer.driver_version is None and j.offer.driver_cuda is None:
        j.add(
            "cuda",
            "unchecked",
            f"the driver version is unknown: the CUDA {first} it needs was not checked",
        )
        return
    runs_here = j.offer.driver_cuda.split(".")[0] if j.offer.driver_cuda else None
    for major, (why, main) in needs.items():
        if j.runs_major(major) is not False:
            continue
        status: Status = "fail" if main else "partial"
        j.add(
            "cuda",
            status,
            f"{why}; {j.driver_text()}: {DRIVER_TOO_OLD!r}"
            + ("" if main else " (an optional object: the rest loads)"),
            fixes.driver_upgrade(j.family_minimum(major), major)
            + ", or "
            + fixes.reinstall(
                j.needs, f"for CUDA {runs_here}" if runs_here else "this driver runs"
            ),
        )


def _isa_limit(j: Judging) -> Version | None:
    """The newest PTX ISA this driver JIT-compiles; None when the driver is not known."""
    offer = j.offer
    cuda: Version | None = None
    if offer.driver_version is not None:
        try:
            cuda = j.compat.max_cuda_for_driver(offer.driver_version)
        except CushipError:
            cuda = None
    if cuda is None and offer.driver_cuda is not None:
        try:
            cuda = Version(offer.driver_cuda)
        except InvalidVersion:
            cuda = None
    return None if cuda is None else j.compat.isa_limit(cuda)


def jit_driver(j: Judging) -> None:
    """PTX a GPU must JIT against the PTX ISA versions this driver compiles (``ptx.toml``);
    objects whose ISA is not known fall back on the CUDA release their label names."""
    by_path = {o.path: o for o in j.objects}
    limit = _isa_limit(j)
    unread: list[GpuRun] = []
    for run in (r for r in j.gpus if r.runs == "ptx"):
        for path in run.objects:
            obj = by_path.get(path)
            isa = None if obj is None else newest_isa(obj)
            if obj is None or isa is None or j.compat.cuda_of_isa(str(isa)) is None:
                unread.append(run)
            elif limit is not None and isa > limit:
                _too_new(j, run, obj, isa, limit)
            elif limit is None:
                j.add(
                    "cuda",
                    "unchecked",
                    f"{run.gpu} ({run.cc}) must JIT {path}'s PTX ISA {isa}; the driver's JIT "
                    "limit is not known: not checked",
                )
    if unread:
        _jit_by_label(j, list(dict.fromkeys(unread)))


def _too_new(j: Judging, run: GpuRun, obj: ObjectNeeds, isa: Version, limit: Version) -> None:
    cuda = j.compat.cuda_of_isa(str(isa))
    minimum = _min_driver(j, cuda)
    main = optional_reason(obj, j.needs.own) is None
    sm = run.cc.replace(".", "")
    need = f"{minimum} or newer" if minimum else f"one that runs CUDA {cuda}"
    j.add(
        "cuda",
        "fail" if main else "partial",
        f"{run.gpu} ({run.cc}) must JIT the PTX of {obj.path}, ISA {isa} (CUDA {cuda}); "
        f"{j.driver_text()}, whose JIT takes ISA {limit} at most: {PTX_TOO_NEW!r}",
        f"upgrade the NVIDIA driver to {need}, or "
        + fixes.reinstall(j.needs, f"that has SASS for sm_{sm}"),
    )


def _min_driver(j: Judging, cuda: Version | None) -> str | None:
    """The oldest driver of CUDA ``cuda``'s first release (its JIT knows that release's ISA)."""
    if cuda is None:
        return None
    wanted = f"{cuda.major}.{cuda.minor}"
    drivers = [t.min_driver_linux for t in j.compat.toolkits if t.major_minor == wanted]
    return format_driver(min(drivers)) if drivers else None


def _jit_by_label(j: Judging, jit: list[GpuRun]) -> None:
    """PTX of unknown ISA: the CUDA the label names must be one this driver JITs."""
    label = j.needs.label_cuda
    if label is None:
        return
    cuda = Version(label)
    if len(cuda.release) < 2:
        return
    runs = driver_runs(
        cuda,
        driver_version=j.offer.driver_version,
        driver_cuda=j.offer.driver_cuda,
        jit=True,
        compat=j.compat,
    )
    if runs is not False:
        return
    try:  # the label names the minor, not the patch: the newest patch's driver
        minimum: str | None = format_driver(
            j.compat.cuda(f"{cuda.major}.{cuda.minor}").min_driver_linux
        )
    except CushipError:
        minimum = None
    for run in jit:
        sm = run.cc.replace(".", "")
        need = f"{minimum} or newer" if minimum else f"one that runs CUDA {cuda}"
        j.add(
            "cuda",
            "fail",
            f"{run.gpu} ({run.cc}) must JIT {', '.join(run.arches)} made by CUDA {cuda}; "
            f"{j.driver_text()}: {PTX_TOO_NEW!r}",
            f"upgrade the NVIDIA driver to {need}, or "
            + fixes.reinstall(j.needs, f"that has SASS for sm_{sm}"),
        )
