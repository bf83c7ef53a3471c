"""The torch check: the build of torch the objects need (CPU, CUDA of one major, ROCm), the
release (exact ABI: the same minor; stable ABI: that one or newer) and the C++ ABI (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from packaging.utils import canonicalize_name

from cuship.judge import fixes
from cuship.judge.model import TorchVerdict
from cuship.judge.needs import ObjectNeeds, minor_of, minor_tuple
from cuship.judge.offer import TorchBuild
from cuship.judge.state import Judging
from cuship.wheel.cudalibs import cuda_major_of
from cuship.wheel.torchabi import strictest

__all__ = ["judge_torch"]

_FLAVOUR_NAMES = {"cuda": "CUDA", "rocm": "ROCm", "xpu": "XPU", "cpu": "CPU"}


def _built(j: Judging) -> tuple[str | None, str | None]:
    needs = j.needs
    if needs.label_torch is not None:
        return needs.label_torch, "local version label"
    pin = needs.torch_requirement
    if pin is not None and pin.built_against:
        return pin.built_against, "Requires-Dist"
    return None, None


def _requirement(abi: str, built: str | None) -> str:
    if built is None:
        return "torch"
    return f"torch=={built}.*" if abi == "exact" else f"torch>={built}"


def judge_torch(j: Judging) -> None:
    """Run the torch checks of ``j``'s objects; sets ``j.torch``."""
    objects = [o for o in j.objects if o.links_torch]
    abi = strictest(o.torch_abi for o in objects)
    if not objects and not j.needs.complete and j.needs.label_torch:
        abi = "exact"  # judged by its label alone: a label naming torch means its C++ API
    built, source = _built(j)
    installed = j.offer.torch
    base = TorchVerdict(
        abi=abi,
        flavour=next((o.torch_flavour for o in objects if o.torch_flavour), None),
        cuda_major=_cuda_major(objects),
        built=built,
        built_from=source,
        installed=None if installed is None else installed.described,
    )
    if canonicalize_name(j.needs.name) == "torch":
        j.torch = TorchVerdict(abi=abi, installed=base.installed, reason="this is torch itself")
        return
    if abi == "none" and not objects:
        j.torch = TorchVerdict(installed=base.installed, ok=True, reason="links no torch")
        return
    if installed is None:
        j.torch = _missing(j, base, objects)
        return
    j.torch = _flavour(j, base, installed, objects) or _release(j, base, installed, objects)


def _cuda_major(objects: Sequence[ObjectNeeds]) -> int | None:
    majors = sorted({m for o in objects for m in o.cuda_majors})
    return majors[-1] if majors else None


def _missing(j: Judging, base: TorchVerdict, objects: Sequence[ObjectNeeds]) -> TorchVerdict:
    pin = j.needs.torch_requirement
    requirement = _requirement(base.abi, base.built)
    if pin is None and base.built is None and _bridge(j):  # an optional torch bridge
        j.add("torch", "partial", "links torch but does not require it: loads only with torch")
        return TorchVerdict(
            abi=base.abi, ok=True, reason="does not require torch: loads only where it is"
        )
    if j.context.installing and pin is not None:
        j.add(
            "torch", "partial", f"torch is not installed; installing it brings in {pin.requirement}"
        )
        return TorchVerdict(
            abi=base.abi,
            built=base.built,
            built_from=base.built_from,
            ok=None,
            reason=f"installing brings in {pin.requirement}",
        )
    libraries = sorted({lib for o in objects for lib in o.torch_libraries})
    error = f"{libraries[0]}: cannot open shared object file" if libraries else "undefined symbol"
    built = (
        f"built for {requirement} ({base.abi} ABI)"
        if base.built
        else f"links torch ({base.abi} ABI)"
    )
    j.add(
        "torch",
        "fail",
        f"{built} but torch is not installed: {error!r}",
        fixes.torch_install(requirement, None),
    )
    return TorchVerdict(
        abi=base.abi,
        built=base.built,
        built_from=base.built_from,
        ok=False,
        reason="torch is not installed",
    )


def _bridge(j: Judging) -> bool:
    """Whether the objects linking torch are a bridge beside the package's own work: some of
    its objects with device code or NVIDIA libraries link no torch (a package whose every such
    object links torch, fbgemm-gpu, needs torch though its METADATA does not say so)."""
    return any(o.matters and not o.links_torch for o in j.own)


def _linked(objects: Sequence[ObjectNeeds], flavour: str) -> str:
    names = [
        lib
        for o in objects
        for lib in o.torch_libraries
        if f"_{'hip' if flavour == 'rocm' else flavour}" in lib
    ]
    return names[0] if names else "torch's GPU libraries"


def _flavour(
    j: Judging, base: TorchVerdict, installed: TorchBuild, objects: Sequence[ObjectNeeds]
) -> TorchVerdict | None:
    """The build check; a verdict when it fails or cannot run, None to go on."""
    wanted = base.flavour
    if wanted is None:
        return None
    if installed.flavour is None:
        j.add(
            "torch",
            "unchecked",
            f"links torch's {_FLAVOUR_NAMES[wanted]} libraries; whether {installed.described} is "
            f"a {_FLAVOUR_NAMES[wanted]} build could not be read",
        )
        return None
    minor = base.built or minor_of(installed.version)
    if installed.flavour != wanted:
        library = _linked(objects, wanted)
        major = base.cuda_major or _label_major(j)
        fix = (
            fixes.torch_for_cuda(j.compat, j.needs, j.offer, major, minor)
            if wanted == "cuda" and major is not None
            else fixes.torch_install(f"torch=={minor}.*", None, None)
            + f"  (a {_FLAVOUR_NAMES[wanted]} build of torch)"
        )
        j.add(
            "torch",
            "fail",
            f"links {library} ({_FLAVOUR_NAMES[wanted]} torch); {installed.described} is a "
            f"{_FLAVOUR_NAMES[installed.flavour]} build: '{library}: cannot open shared object file'",
            fix,
        )
        return _failed(base, f"needs a {_FLAVOUR_NAMES[wanted]} build of torch")
    need = base.cuda_major
    have = installed.cuda_major
    if wanted == "cuda" and need is not None and have is not None and need != have:
        runtime = next(lib for o in objects for lib in o.libraries if cuda_major_of(lib) == need)
        j.add(
            "torch",
            "fail",
            f"links CUDA {need}'s runtime ({runtime}) and torch's CUDA libraries; "
            f"{installed.described} is built for CUDA {have}: '{runtime}: cannot open shared "
            f"object file' (or two CUDA runtimes in one process)",
            fixes.torch_for_cuda(j.compat, j.needs, j.offer, need, minor)
            + ", or "
            + fixes.reinstall(j.needs, f"built for CUDA {have}"),
        )
        return _failed(base, f"needs torch built for CUDA {need}")
    return None


def _label_major(j: Judging) -> int | None:
    label = j.needs.label_cuda
    if not label:
        return None
    head = label.split(".", 1)[0]
    return int(head) if head.isdigit() else None


def _failed(base: TorchVerdict, reason: str) -> TorchVerdict:
    return replace(base, ok=False, reason=reason)


def _release(
    j: Judging, base: TorchVerdict, installed: TorchBuild, objects: Sequence[ObjectNeeds]
) -> TorchVerdict:
    """The release and C++ ABI checks: where the objects were bound against the installed
    torch's own files (:mod:`cuship.judge.ldso`), that is the fact; else the torch the wheel
    says it was built for, against the rules of its ABI."""
    if j.bound_torch is True:
        j.add("torch", "pass", f"its torch symbols bind to {installed.described}'s libraries")
        return _with(base, True, f"its symbols bind to torch {installed.version}")
    if j.bound_torch is False:
        return _failed(base, f"undefined torch symbols with torch {installed.version}")
    if base.built is None:
        j.add(
            "torch",
            "unchecked",
            f"links torch ({base.abi} ABI) but the torch it was built for is unknown (no torch "
            "pin, no label naming one)",
        )
        return _with(base, None, "the torch it was built for is unknown")
    have, want = minor_tuple(installed.version), minor_tuple(base.built)
    if base.abi == "stable":
        fits = have is not None and want is not None and have >= want
    else:
        fits = have == want
    if not fits:
        requirement = _requirement(base.abi, base.built)
        symbol = next(
            (o.torch_symbol for o in objects if o.torch_abi == base.abi and o.torch_symbol), None
        )
        hint = "_ZN3c10…" if base.abi == "exact" else "aoti_torch_…"
        j.add(
            "torch",
            "fail",
            f"built for {requirement} ({base.abi} ABI, from its {base.built_from}); installed "
            f"torch is {installed.version}: 'undefined symbol: {symbol or hint}'",
            fixes.torch_fix(j.needs, requirement, installed),
        )
        return _failed(base, f"needs {requirement}")
    return _cxx11(j, base, installed, objects)


def _cxx11(
    j: Judging, base: TorchVerdict, installed: TorchBuild, objects: Sequence[ObjectNeeds]
) -> TorchVerdict:
    said = [o.cxx11 for o in objects if o.cxx11 is not None]
    wanted = said[0] if said else j.needs.label_cxx11abi
    where = "its symbols" if said else "its label"
    have = installed.cxx11abi
    if base.abi == "exact" and wanted is not None and have is None:
        j.add(
            "torch",
            "unchecked",
            f"torch's C++ ABI unknown: cxx11abi={wanted} ({where}) not checked",
        )
        return _with(base, True, f"fits torch {installed.version}")
    if base.abi != "exact" or wanted is None or have is None or wanted == have:
        j.add("torch", "pass", f"fits {installed.described}")
        return _with(base, True, f"fits torch {installed.version}")
    j.add(
        "torch",
        "fail",
        f"built for cxx11abi={wanted} ({where}); installed torch {installed.version} has "
        f"cxx11abi={have}: 'undefined symbol: …' for every std::string in the API",
        fixes.reinstall(j.needs, f"that has cxx11abi{str(have).upper()} in its label"),
    )
    return _failed(base, f"built for cxx11abi={wanted}")


def _with(base: TorchVerdict, ok: bool | None, reason: str) -> TorchVerdict:
    return replace(base, ok=ok, reason=reason)
