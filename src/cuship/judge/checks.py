"""The judge's checks on files, CUDA alternatives, GPUs and glibc, in the order they run (pure).
Each appends :class:`Check` rows. The CUDA release checks are :mod:`cuship.judge.release`'s,
the library checks :mod:`cuship.judge.libraries`', loading and binding
:mod:`cuship.judge.ldso`'s, torch's :mod:`cuship.judge.torch`'s.

- **alternatives**: a package with objects for several CUDA majors (``libbitsandbytes_cuda126``
  beside ``libbitsandbytes_cuda130``) loads one set: the one of torch's CUDA major when torch is
  a CUDA build among them, else the newest the driver runs. The others are named, not judged.
- **gpu**: every GPU against the SASS and PTX the runtime loads from each of the package's own
  objects (bundled NVIDIA libraries and relocatable code never count). No object runs on a GPU:
  ``no kernel image``. Some have nothing for it beside objects that run (an object built only
  for sm_100, an optional sm_90a one: :mod:`cuship.judge.roles`): a partial fit, named.
- **glibc**: the platform tag's glibc against the system's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import parse_tag

from cuship.arch import sm_key
from cuship.judge import fixes
from cuship.judge.gpu import gpu_coverage
from cuship.judge.model import NO_KERNEL, GlibcVerdict, GpuRun, Runs, which
from cuship.judge.needs import ObjectNeeds, minor_tuple
from cuship.judge.offer import TorchBuild
from cuship.judge.roles import optional_reason
from cuship.judge.state import Judging
from cuship.wheel.cudalibs import cuda_major_of

__all__ = [
    "alternatives",
    "device_code",
    "files",
    "glibc_check",
    "gpu",
    "torch_to_come",
]

# PEP 600: the legacy manylinux tags are aliases of these glibc versions.
_LEGACY_MANYLINUX = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}
_MANYLINUX = re.compile(r"^manylinux_(\d+)_(\d+)_")


def _union(groups: Iterable[Sequence[str]]) -> tuple[str, ...]:
    return tuple(sorted({sm for group in groups for sm in group}, key=sm_key))


def device_code(objects: Sequence[ObjectNeeds]) -> str:
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
        f"here ({why}); not {which(named)}",
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
        f"{torch.described} loads; not {which(skipped)}",
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
            f"no GPU here: its device code ({device_code(device)}) installs but cannot run",
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
    if len(lacking) == len(device):
        _no_kernel(j, name, cc, lacking)
        return GpuRun(gpu=name, cc=cc, runs="none", objects=tuple(o.path for o in lacking))
    if lacking:
        _some_lack(j, name, cc, lacking)
    for obj in vendor:
        if gpu_coverage(cc, obj.sass, obj.ptx)[0] is None:
            j.add(
                "gpu",
                "partial",
                f"{name} ({cc}): the bundled NVIDIA library {obj.path} has no code for it "
                f"({device_code([obj])})",
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


def _no_kernel(j: Judging, name: str, cc: str, lacking: Sequence[ObjectNeeds]) -> None:
    sm = cc.replace(".", "")
    one = len(lacking) == 1
    j.add(
        "gpu",
        "fail",
        f"{name} ({cc}): {which([o.path for o in lacking])} "
        + ("carries" if one else "carry")
        + f" no SASS or PTX it can run ({'it has' if one else 'they have'} "
        f"{device_code(lacking)}): {NO_KERNEL!r}",
        fixes.reinstall(j.needs, f"that has SASS for sm_{sm} (or PTX <= compute_{sm})"),
    )


def _some_lack(j: Judging, name: str, cc: str, lacking: Sequence[ObjectNeeds]) -> None:
    """Objects with no code for the GPU beside objects that run: named, optional ones with
    why they are optional."""
    optional = {o.path: optional_reason(o, j.needs.own) for o in lacking}
    described = [
        o.path + (f" (optional: {optional[o.path]})" if optional[o.path] else "") for o in lacking
    ]
    one = len(lacking) == 1
    j.add(
        "gpu",
        "partial",
        f"{name} ({cc}): {which(described)} {'has' if one else 'have'} no code for it "
        f"({device_code(lacking)}), beside objects that run: the kernels of "
        f"{'that object' if one else 'those'} are not available here",
    )


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
