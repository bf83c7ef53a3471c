"""The NVIDIA libraries a package's objects link, where each comes from on this machine, and
the check of those from nowhere (pure).

Where the objects are installed here, a library comes from where the loader emulation found it
(:mod:`cuship.judge.ldso`: DT_RUNPATH into an NVIDIA wheel, already loaded by torch, the loader
cache). Otherwise (a wheel judged before its install): bundled in the wheel, the driver
(libcuda), torch's own NVIDIA wheels (for an object that loads with torch, from a CUDA build of
the same major), a Requires-Dist the install brings, the environment or the system. From
nowhere: ``cannot open shared object file``. The fix: the package's own extra that brings the
library first, then the NVIDIA wheel of the library's CUDA major.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from cuship.judge import fixes
from cuship.judge.model import CANNOT_OPEN, LibraryNeed, which
from cuship.judge.needs import ObjectNeeds
from cuship.judge.release import majors_needed
from cuship.judge.roles import core_library, optional_reason
from cuship.judge.state import Judging
from cuship.wheel.cudalibs import (
    cuda_major_of,
    is_driver_lib,
    is_nvidia_lib,
    library_stem,
    toolkit_libraries,
    toolkit_majors,
)

__all__ = ["best_extra", "libraries_check", "sonames_of"]


def libraries_check(j: Judging) -> None:
    """Every NVIDIA library the objects link, where it comes from here, and whether the driver
    runs its CUDA major; the missing ones are one check (:func:`_missing`)."""
    needed: dict[str, list[ObjectNeeds]] = {}
    for obj in j.needs.objects:
        for lib in obj.libraries:
            needed.setdefault(lib, []).append(obj)
    judged_paths = {o.path for o in j.objects}
    found: list[LibraryNeed] = []
    for soname, users in needed.items():
        judged = any(u.path in judged_paths for u in users)
        major = cuda_major_of(soname)
        source = _source(j, soname)
        runs = j.runs_major(major) if major is not None and j.offer.gpus else None
        found.append(
            LibraryNeed(
                soname=soname,
                objects=tuple(u.path for u in users),
                cuda_major=major,
                source=source,
                runs=runs,
                judged=judged,
            )
        )
    j.libraries = tuple(found)
    _missing(j, [lib for lib in found if lib.judged], judged_paths)
    _opened_unloaded(j)
    _wheel_dirs_unloaded(j)


def _opened_unloaded(j: Judging) -> None:
    """The NVIDIA libraries objects open at run time, for objects the loader did not load
    (a wheel judged before its install): looked for as the libraries they link are, each
    library's names (``libcudart.so.12``, ``libcudart.so.13``) alternatives."""
    loaded = {load.path for load in j.loads}
    for obj in j.objects:
        if obj.role == "vendor" or obj.path in loaded or not obj.opens:
            continue
        groups: dict[str, list[str]] = {}
        for name in obj.opens:
            if is_nvidia_lib(name) and not is_driver_lib(name):
                groups.setdefault(library_stem(name), []).append(name)
        lost = [
            " or ".join(names)
            for names in groups.values()
            if all(_source(j, name) is None for name in names)
        ]
        if not lost or j.offer.libraries is None:
            continue
        core = obj.device and bool(j.offer.gpus) and optional_reason(obj, j.needs.own) is None
        core = core and any(core_library(name.split(" or ")[0]) for name in lost)
        first = lost[0].split(" or ")[0]
        j.add(
            "libraries",
            "fail" if core else "partial",
            f"{obj.path} opens {which(lost, 3)} at run time (dlopen); nothing here provides "
            f"{'it' if len(lost) == 1 else 'them'}: its CUDA work fails with "
            f"'{first}: {CANNOT_OPEN}'",
            fixes.library_install(first, _object_major(j, obj)) if core else "",
        )


_WHEEL_DIR = re.compile(r"(?:^|/)nvidia/")


def _wheel_dirs_unloaded(j: Judging) -> None:
    """Objects that open their CUDA libraries at run time from NVIDIA's wheel directories
    (jax-cuda13-plugin: ``$ORIGIN/../nvidia/cu13/lib``), judged before they are installed:
    their CUDA major's runtime and cuBLAS must come with the install or be on the machine."""
    loaded = {load.path for load in j.loads}
    for obj in j.objects:
        entries = [e for e in (*obj.runpath, *obj.rpath) if _WHEEL_DIR.search(e)]
        if obj.path in loaded or obj.role == "vendor" or obj.opens is None or not entries:
            continue
        needs = majors_needed(obj, j.compat)
        if not (obj.device or obj.static_runtime) or not needs or j.offer.libraries is None:
            continue
        major = needs[0].major
        core = [lib.soname for lib in toolkit_libraries(major) if lib.extra in ("cudart", "cublas")]
        if not core or any(_source(j, soname) is not None for soname in core):
            continue
        main = obj.device and bool(j.offer.gpus) and optional_reason(obj, j.needs.own) is None
        extra, _ = best_extra(j.needs.requires, set(core))
        fix = (
            f'pip install "{canonicalize_name(j.needs.name)}[{extra}]"'
            if extra
            else fixes.library_install(core[-1], major)
        )
        j.add(
            "libraries",
            "fail" if main else "partial",
            f"{obj.path} opens CUDA {major}'s libraries at run time from {entries[0]}; neither the "
            f"install nor this machine brings any ({which(core, 3)}): its CUDA work fails with "
            f"'{core[-1]}: {CANNOT_OPEN}'",
            fix if main else "",
        )


def _object_major(j: Judging, obj: ObjectNeeds) -> int | None:
    needs = majors_needed(obj, j.compat)
    return needs[0].major if needs else j.cuda_major


def _missing(j: Judging, found: Sequence[LibraryNeed], judged: set[str]) -> None:
    """One check for the libraries from nowhere: a failure when no object that needs
    NVIDIA libraries can load, a partial fit when some can (cupy without cuTENSOR)."""
    missing = [lib for lib in found if lib.source is None]
    if not missing:
        return
    if j.offer.libraries is None:
        names = [lib.soname for lib in missing]
        j.add(
            "libraries",
            "unchecked",
            f"the NVIDIA libraries here were not looked for: {which(names, 3)} not checked",
        )
        return
    lost = {path for lib in missing for path in lib.objects if path in judged}
    users = {path for lib in found for path in lib.objects if path in judged}
    names = [lib.soname for lib in missing]
    where = "there is no NVIDIA driver here, and " if any(is_driver_lib(n) for n in names) else ""
    providers = "the wheel, "
    message = (
        f"{which(sorted(lost))} {'needs' if len(lost) == 1 else 'need'} "
        f"{which(names, 3)}: {where}neither {providers}torch, the installed NVIDIA wheels "
        f"nor the system provides {'it' if len(names) == 1 else 'them'}: "
        f"'{names[0]}: {CANNOT_OPEN}'"
    )
    stale = [(n, j.stale[n]) for n in names if n in j.stale]
    if stale:
        message += (
            f" ({stale[0][0]} is in {stale[0][1]}, which ld.so.conf names but the loader cache "
            "does not list: run ldconfig)"
        )
    # A missing library of the CUDA runtime family (libcudart, libnvrtc, libcublas: their
    # SONAMEs name the major) fails the package; one of the rest (cuTENSOR, NCCL) fails only
    # the objects that need it, when others load.
    core = any(cuda_major_of(name) is not None for name in names)
    if users - lost and not core:
        j.add(
            "libraries",
            "partial",
            message + f"; the objects that need only what is here load "
            f"({which(sorted(users - lost))})",
        )
        return
    j.add("libraries", "fail", message, _library_fix(j, missing))


def _library_fix(j: Judging, missing: Sequence[LibraryNeed]) -> str:
    """The package's own extra that brings the most of the missing libraries (cupy's
    ``[ctk]``), then the wheel of each library left."""
    if any(is_driver_lib(lib.soname) for lib in missing):
        return "run it on a machine with an NVIDIA driver"
    wanted = {lib.soname for lib in missing}
    extra, covered = best_extra(j.needs.requires, wanted)
    lines = [f'pip install "{canonicalize_name(j.needs.name)}[{extra}]"'] if extra else []
    lines += [
        fixes.library_install(lib.soname, _major(j, lib))
        for lib in missing
        if lib.soname not in covered
    ]
    return "; ".join(dict.fromkeys(lines))


def _major(j: Judging, lib: LibraryNeed) -> int | None:
    """The CUDA major of the wheel that brings ``lib``: its SONAME's, else the one the objects
    needing it are built for (cuDNN for a CUDA 13 object: nvidia-cudnn-cu13)."""
    if lib.cuda_major is not None:
        return lib.cuda_major
    users = [o for o in j.objects if o.path in lib.objects]
    for obj in users:
        for need in majors_needed(obj, j.compat):
            return need.major
    return j.cuda_major


def _source(j: Judging, soname: str) -> str | None:
    """Where ``soname`` comes from: as the loader found it for the installed objects that
    need it (:mod:`cuship.judge.ldso`), else by what the wheel, the driver, torch, the
    install and the machine offer."""
    if soname in j.found:
        return j.found[soname]
    if soname in j.needs.bundled:
        return "bundled in the wheel"
    if is_driver_lib(soname):
        return "the NVIDIA driver" if j.offer.has_driver else None
    torch = j.offer.torch
    # A CUDA build of torch installs NVIDIA's wheels of its major: what loads beside torch
    # finds their libraries (torch loads them first, or the package looks them up there).
    if (
        torch is not None
        and torch.cuda_major is not None
        and soname in {lib.soname for lib in toolkit_libraries(torch.cuda_major, with_torch=True)}
    ):
        return f"{torch.described}'s NVIDIA wheels"
    required = _required(j, soname)
    if required is not None:
        return required
    return j.offer.libraries.where(soname) if j.offer.libraries is not None else None


def _required(j: Judging, soname: str) -> str | None:
    """The Requires-Dist entry that installs ``soname``, when installing brings it."""
    if not j.context.installing:
        return None
    for line in j.needs.requires:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.marker is not None and not any(
            req.marker.evaluate({"extra": extra}) for extra in (*j.context.extras, "")
        ):
            continue
        if soname in sonames_of(req):
            return f"its requirement {line.split(';', 1)[0].strip()!r}"
    return None


def sonames_of(req: Requirement) -> frozenset[str]:
    """The SONAMEs a requirement installs: an NVIDIA library wheel's own, or those of the
    ``cuda-toolkit`` extras it names, for the CUDA majors its version allows."""
    name = canonicalize_name(req.name)
    found: set[str] = set()
    for major in toolkit_majors():
        toolkit = name == "cuda-toolkit"
        if toolkit and not _allows_major(req, str(major)):
            continue
        for lib in toolkit_libraries(major):
            wheel = Requirement(lib.wheel)
            if (toolkit and lib.extra in req.extras) or (
                canonicalize_name(wheel.name) == name and _versions_meet(req, wheel)
            ):
                found.add(lib.soname)
    return frozenset(found)


def best_extra(requires: Sequence[str], wanted: set[str]) -> tuple[str | None, set[str]]:
    """The extra of a package whose requirements install the most of ``wanted``, and those."""
    provided: dict[str, set[str]] = {}
    for line in requires:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        for extra in re.findall(r"extra\s*==\s*['\"]([^'\"]+)['\"]", str(req.marker or "")):
            provided.setdefault(extra, set()).update(sonames_of(req) & wanted)
    best = max(sorted(provided), key=lambda extra: len(provided[extra]), default=None)
    if best is None or not provided[best]:
        return None, set()
    return best, provided[best]


def _allows_major(req: Requirement, major: str) -> bool:
    """Whether ``req`` admits some release ``major.N`` (N < 20)."""
    if not req.specifier:
        return True
    return any(
        req.specifier.contains(f"{major}.{minor}.0", prereleases=True) for minor in range(20)
    )


def _versions_meet(req: Requirement, wheel: Requirement) -> bool:
    """Whether ``req`` admits a release of the major the data's entry pins (``==13.*``)."""
    if not wheel.specifier:
        return True
    major = next(iter(wheel.specifier)).version.split(".", 1)[0]
    return _allows_major(req, major)
