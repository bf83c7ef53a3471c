"""The judge's checks, in the order they run (pure). Each appends :class:`Check` rows.

- **alternatives**: a package with objects for several CUDA majors (``libbitsandbytes_cuda126``
  beside ``libbitsandbytes_cuda130``) loads one set: the one of torch's CUDA major when torch is
  a CUDA build among them, else the newest the driver runs. The others are named, not judged.
- **gpu**: every GPU against the SASS and PTX the runtime loads from each of the package's own
  objects (bundled NVIDIA libraries and relocatable code never count). No object runs on a GPU:
  ``no kernel image``. Some do and others have nothing for it (an object built only for sm_100
  beside ones that run here): a partial fit, named, not a failure.
- **cuda**: each CUDA major named by a needed SONAME against the driver (minor-version
  compatibility); PTX a GPU must JIT needs the driver of the toolkit minor that made it.
- **libraries**: every NVIDIA library needed, and where it comes from: bundled in the wheel,
  the driver (libcuda), torch's own (for an object that loads with torch, from a CUDA build of
  the same major), a Requires-Dist the install brings, the environment or the system. From
  nowhere: ``cannot open shared object file``.
- **torch**: the build (an object linking libc10_cuda needs a CUDA torch; with libcudart.so.12,
  a torch built for CUDA 12), the release (exact ABI: the same minor; stable: that one or newer)
  and the C++ ABI.
- **glibc**: the platform tag's glibc against the system's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import parse_tag
from packaging.utils import canonicalize_name
from packaging.version import Version

from cuship.compat.models import format_driver
from cuship.errors import CushipError
from cuship.judge import fixes
from cuship.judge.gpu import driver_runs, gpu_coverage
from cuship.judge.model import GlibcVerdict, GpuRun, LibraryNeed, Runs
from cuship.judge.needs import ObjectNeeds, minor_tuple
from cuship.judge.offer import TorchBuild
from cuship.judge.state import Judging
from cuship.wheel.audit import sm_key
from cuship.wheel.cudalibs import (
    cuda_major_of,
    is_driver_lib,
    toolkit_libraries,
    toolkit_majors,
)

__all__ = [
    "alternatives",
    "cuda",
    "files",
    "glibc_check",
    "gpu",
    "jit_driver",
    "libraries_check",
    "torch_to_come",
]

NO_KERNEL = "no kernel image is available for execution on the device"
DRIVER_TOO_OLD = "CUDA driver version is insufficient for CUDA runtime version"
PTX_TOO_NEW = "the provided PTX was compiled with an unsupported toolchain"
CANNOT_OPEN = "cannot open shared object file: No such file or directory"

# PEP 600: the legacy manylinux tags are aliases of these glibc versions.
_LEGACY_MANYLINUX = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}
_MANYLINUX = re.compile(r"^manylinux_(\d+)_(\d+)_")


def _which(paths: Sequence[str], limit: int = 2) -> str:
    shown = ", ".join(paths[:limit])
    return shown + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


def _union(groups: Iterable[Sequence[str]]) -> tuple[str, ...]:
    return tuple(sorted({sm for group in groups for sm in group}, key=sm_key))


def _device_code(objects: Sequence[ObjectNeeds]) -> str:
    sass = [f"sm_{s}" for s in _union(o.sass for o in objects)]
    ptx = [f"compute_{p}" for p in _union(o.ptx for o in objects)]
    return ", ".join(sass + ptx) or "none"


# --- files ------------------------------------------------------------------------------


def torch_to_come(j: Judging) -> None:
    """Before an install where no torch is installed and the wheel requires one: judge against
    the torch the install brings, PyPI's build of the newest release the requirement admits."""
    pin = j.needs.torch_requirement
    if j.offer.torch is not None or not j.context.installing or pin is None:
        return
    try:
        wanted = Requirement(f"torch {pin.requirement.removeprefix('torch').strip()}")
    except InvalidRequirement:
        return
    admitted = [r for r in j.compat.torch if wanted.specifier.contains(r.latest, prereleases=True)]
    if not admitted:
        return
    release = admitted[-1]
    brought = TorchBuild(
        version=str(release.latest),
        flavour="cuda",
        cuda=release.pypi_cuda,
        cxx11abi=release.cxx11_abi[-1],
        flavour_from="PyPI",
    )
    j.offer = replace(j.offer, torch=brought)
    j.add(
        "torch",
        "partial",
        f"torch is not installed; installing it brings in {pin.requirement}: "
        f"{brought.described}, PyPI's build of the newest release it admits",
    )


def files(j: Judging) -> None:
    for line in j.needs.unread:
        j.add("files", "unchecked", f"could not read {line}: its needs were not checked")
    if not j.needs.complete:
        j.add(
            "files",
            "unchecked",
            "the index recorded only the union of its device code (an older manifest): "
            "its objects were not judged one by one",
        )


# --- alternatives -----------------------------------------------------------------------


def alternatives(j: Judging) -> None:
    """Choose the objects that load here when the package carries some for several CUDA
    majors, or (bitsandbytes' ``libbitsandbytes_cuda126.so`` beside ``…_cuda128.so``) for
    several CUDA releases named in the files: those of torch's CUDA."""
    majors = sorted({m for o in j.needs.own for m in o.cuda_majors})
    j.objects = j.needs.objects
    if len(majors) >= 2:
        _choose_major(j, majors)
    else:
        j.cuda_major = majors[0] if majors else None
    _choose_release(j)


def _choose_major(j: Judging, majors: Sequence[int]) -> None:
    torch = j.offer.torch
    chosen = torch.cuda_major if torch is not None and torch.cuda_major in majors else None
    why = f"the CUDA of {torch.described}" if chosen is not None and torch else ""
    if chosen is None:
        runnable = [m for m in majors if j.runs_major(m) is not False]
        chosen = runnable[-1] if runnable else majors[-1]
        why = "the newest CUDA this driver runs" if runnable else "the newest it has"
    j.cuda_major = chosen
    j.objects = tuple(o for o in j.needs.objects if not o.cuda_majors or chosen in o.cuda_majors)
    others = [o for o in j.needs.own if o.cuda_majors and chosen not in o.cuda_majors]
    named = [
        f"{o.path} ({', '.join(lib for lib in o.libraries if cuda_major_of(lib))})" for o in others
    ]
    j.add(
        "cuda",
        "partial",
        f"has objects for CUDA {', '.join(map(str, majors))}: those for CUDA {chosen} load "
        f"here ({why}); not {_which(named)}",
    )


_RELEASE_TOKEN = re.compile(r"(?:cuda|cu)_?(\d{3})(?=\D|$)")


def _release_of(path: str) -> str | None:
    """``126`` of ``libbitsandbytes_cuda126.so``: the CUDA release a file name says it is for."""
    match = _RELEASE_TOKEN.search(path.rsplit("/", 1)[-1])
    return match[1] if match else None


def _choose_release(j: Judging) -> None:
    torch = j.offer.torch
    if torch is None or torch.cuda_major is None or not torch.cuda:
        return
    named = {o.path: _release_of(o.path) for o in j.objects if o.role != "vendor" and o.cuda_majors}
    releases = {r for r in named.values() if r is not None}
    wanted = torch.cuda.replace(".", "")
    if len(releases) < 2 or wanted not in releases:
        return
    skipped = [path for path, release in named.items() if release not in (None, wanted)]
    j.objects = tuple(o for o in j.objects if o.path not in skipped)
    j.add(
        "cuda",
        "partial",
        f"names objects for CUDA releases {', '.join(sorted(releases))}: the one for "
        f"{torch.described} loads; not {_which(skipped)}",
    )


# --- gpu --------------------------------------------------------------------------------


def gpu(j: Judging) -> None:
    device = [o for o in j.own if o.device]
    vendor = [o for o in j.objects if o.role == "vendor" and o.device]
    for o in j.own:
        if o.relocatable and not o.device:
            j.add(
                "gpu",
                "partial",
                f"{o.path} carries only relocatable device code ({', '.join(o.relocatable)}, "
                "for a later device link): the runtime loads none of it",
            )
    if not device:
        j.coverage = "cpu"
        return
    if not j.offer.gpus:
        j.coverage = "no-gpu"
        j.add(
            "gpu",
            "partial",
            f"no GPU here: its device code ({_device_code(device)}) installs but cannot run",
        )
        return
    runs: list[GpuRun] = []
    for name, cc in dict.fromkeys(j.offer.gpus):
        if cc is None:
            j.add("gpu", "unchecked", f"{name}: compute capability unknown; not checked")
            continue
        runs.append(_gpu_run(j, name, cc, device, vendor))
    j.gpus = tuple(runs)
    kinds = {run.runs for run in runs}
    j.coverage = "none" if "none" in kinds else ("ptx" if "ptx" in kinds else "sass")
    if not runs:
        j.coverage = "unknown"


def _gpu_run(
    j: Judging, name: str, cc: str, device: Sequence[ObjectNeeds], vendor: Sequence[ObjectNeeds]
) -> GpuRun:
    lacking, jit, used = [], [], set()
    for obj in device:
        kind, arch = gpu_coverage(cc, obj.sass, obj.ptx)
        if kind is None:
            lacking.append(obj)
        elif kind == "ptx":
            jit.append(obj.path)
            used.add(f"compute_{arch}")
        else:
            used.add(f"sm_{arch}")
    arches = tuple(sorted(used, key=lambda a: sm_key(a.partition("_")[2])))
    sm = cc.replace(".", "")
    if lacking and len(lacking) == len(device):
        j.add(
            "gpu",
            "fail",
            f"{name} ({cc}): {_which([o.path for o in lacking])} "
            + ("carries" if len(lacking) == 1 else "carry")
            + f" no SASS or PTX it can run ({'it has' if len(lacking) == 1 else 'they have'} "
            f"{_device_code(lacking)}): {NO_KERNEL!r}",
            fixes.reinstall(j.needs, f"that has SASS for sm_{sm} (or PTX <= compute_{sm})"),
        )
        return GpuRun(gpu=name, cc=cc, runs="none", objects=tuple(o.path for o in lacking))
    if lacking:
        j.add(
            "gpu",
            "partial",
            f"{name} ({cc}): {_which([o.path for o in lacking])} "
            f"{'has' if len(lacking) == 1 else 'have'} no code for it "
            f"({_device_code(lacking)}), beside objects that run: the kernels of "
            f"{'that object' if len(lacking) == 1 else 'those'} are not available here",
        )
    for obj in vendor:
        if gpu_coverage(cc, obj.sass, obj.ptx)[0] is None:
            j.add(
                "gpu",
                "partial",
                f"{name} ({cc}): the bundled NVIDIA library {obj.path} has no code for it "
                f"({_device_code([obj])})",
            )
    runs: Runs = "ptx" if jit else "sass"
    return GpuRun(
        gpu=name,
        cc=cc,
        runs=runs,
        arches=arches,
        objects=tuple(jit),
        partial=tuple(o.path for o in lacking),
    )


# --- cuda -------------------------------------------------------------------------------


def _cuda_needs(j: Judging) -> dict[int, str]:
    """CUDA major -> what says the objects need it: a library whose SONAME names it, else
    (a runtime linked statically, or objects not known) the CUDA the label names."""
    found: dict[int, str] = {}
    for obj in j.objects:
        for lib in obj.libraries:
            major = cuda_major_of(lib)
            if major is not None:
                found.setdefault(major, f"needs {lib} (CUDA {major})")
    label = j.needs.label_cuda
    if not found and label:
        major = int(Version(label).major)
        found[major] = f"built for CUDA {label} (its label; it links no CUDA runtime library)"
    return dict(sorted(found.items()))


def cuda(j: Judging) -> None:
    needs = _cuda_needs(j)
    if not needs:
        return
    if not j.offer.gpus:
        if not j.offer.has_driver:
            j.add(
                "cuda",
                "partial",
                f"no NVIDIA driver here: the CUDA {next(iter(needs))} it needs was not "
                "checked against one",
            )
        return
    if j.offer.driver_version is None and j.offer.driver_cuda is None:
        first = next(iter(needs))
        j.add(
            "cuda",
            "unchecked",
            f"the driver version is unknown: the CUDA {first} it needs was not checked",
        )
        return
    runs_here = j.offer.driver_cuda.split(".")[0] if j.offer.driver_cuda else None
    for major, why in needs.items():
        if j.runs_major(major) is not False:
            continue
        j.add(
            "cuda",
            "fail",
            f"{why}; {j.driver_text()}: {DRIVER_TOO_OLD!r}",
            fixes.driver_upgrade(j.family_minimum(major), major)
            + ", or "
            + fixes.reinstall(
                j.needs, f"for CUDA {runs_here}" if runs_here else "this driver runs"
            ),
        )


def jit_driver(j: Judging) -> None:
    """PTX compiled by the driver needs a driver of the toolkit minor that made it."""
    jit = [run for run in j.gpus if run.runs == "ptx"]
    label = j.needs.label_cuda
    if label is None or not jit:
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
    try:
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


# --- libraries --------------------------------------------------------------------------


def libraries_check(j: Judging) -> None:
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
            f"the NVIDIA libraries here were not looked for: {_which(names, 3)} not checked",
        )
        return
    lost = {path for lib in missing for path in lib.objects if path in judged}
    users = {path for lib in found for path in lib.objects if path in judged}
    names = [lib.soname for lib in missing]
    where = "there is no NVIDIA driver here, and " if any(is_driver_lib(n) for n in names) else ""
    providers = "the wheel, "
    message = (
        f"{_which(sorted(lost))} {'needs' if len(lost) == 1 else 'need'} "
        f"{_which(names, 3)}: {where}neither {providers}torch, the installed NVIDIA wheels "
        f"nor the system provides {'it' if len(names) == 1 else 'them'}: "
        f"'{names[0]}: {CANNOT_OPEN}'"
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
            f"({_which(sorted(users - lost))})",
        )
        return
    j.add("libraries", "fail", message, _library_fix(j, missing))


def _library_fix(j: Judging, missing: Sequence[LibraryNeed]) -> str:
    """The package's own extra that brings the most of the missing libraries (cupy's
    ``[ctk]``), then the wheel of each library left."""
    if any(is_driver_lib(lib.soname) for lib in missing):
        return "run it on a machine with an NVIDIA driver"
    wanted = {lib.soname for lib in missing}
    extra, covered = _best_extra(j.needs.requires, wanted)
    lines = [f'pip install "{j.needs.name}[{extra}]"'] if extra else []
    lines += [
        fixes.library_install(lib.soname, lib.cuda_major)
        for lib in missing
        if lib.soname not in covered
    ]
    return "; ".join(dict.fromkeys(lines))


def _source(j: Judging, soname: str) -> str | None:
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
        if soname in _sonames_of(req):
            return f"its requirement {line.split(';', 1)[0].strip()!r}"
    return None


# --- glibc ------------------------------------------------------------------------------


def glibc_check(j: Judging) -> None:
    tags = [str(t) for text in j.needs.tags for t in _tags(text)]
    claims = {tag: need for tag in tags if (need := _glibc_of(tag)) is not None}
    system = j.offer.glibc
    if not tags:
        j.add("glibc", "unchecked", "no wheel tags: its glibc needs are unknown")
        j.glibc = GlibcVerdict(system=system)
        return
    if not claims:
        j.glibc = GlibcVerdict(tag=tags[0], system=system)
        return
    tag, need = min(claims.items(), key=lambda item: item[1])
    needed = f"{need[0]}.{need[1]}"
    have = minor_tuple(system)
    if have is None:
        j.add(
            "glibc",
            "unchecked",
            f"this system's glibc is unknown (musl?): {tag} needs glibc {needed}",
        )
        j.glibc = GlibcVerdict(tag=tag, needed=needed, system=system)
        return
    ok = need <= have
    if not ok:
        j.add(
            "glibc",
            "fail",
            f"its wheel is tagged {tag}: needs glibc {needed}; this system has {system}: "
            f'"version `GLIBC_{needed}\' not found"',
            fixes.reinstall_fitting(j.needs),
        )
    j.glibc = GlibcVerdict(tag=tag, needed=needed, system=system, ok=ok)


def _glibc_of(tag: str) -> tuple[int, int] | None:
    """(major, minor) of the glibc a tag needs; None when it says nothing of glibc."""
    platform = tag.rsplit("-", 1)[-1]
    match = _MANYLINUX.match(platform)
    if match:
        return int(match[1]), int(match[2])
    return _LEGACY_MANYLINUX.get(platform.split("_", 1)[0])


def _tags(text: str) -> frozenset[object]:
    try:
        return frozenset(parse_tag(text))
    except ValueError:
        return frozenset()


def _sonames_of(req: Requirement) -> frozenset[str]:
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


def _best_extra(requires: Sequence[str], wanted: set[str]) -> tuple[str | None, set[str]]:
    """The extra of a package whose requirements install the most of ``wanted``, and those."""
    provided: dict[str, set[str]] = {}
    for line in requires:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        for extra in re.findall(r"extra\s*==\s*['\"]([^'\"]+)['\"]", str(req.marker or "")):
            provided.setdefault(extra, set()).update(_sonames_of(req) & wanted)
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
