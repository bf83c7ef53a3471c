"""Will the shared objects link here: their torch ABI against the installed torch (the
``undefined symbol: _ZN3c10…`` case) and the wheel's manylinux tag against this system's glibc
(pure)."""

from __future__ import annotations

import re
from dataclasses import replace

from packaging.tags import Tag, parse_tag
from packaging.version import InvalidVersion, Version

from cuship.doctor import fixes
from cuship.doctor.model import GlibcCheck, InstalledPackage, Machine, Problem, TorchCheck
from cuship.wheel.names import Variant
from cuship.wheel.torchabi import strictest

__all__ = ["glibc_check", "torch_check"]

# PEP 600: the legacy manylinux tags are aliases of these glibc versions.
_LEGACY_MANYLINUX = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}
_MANYLINUX = re.compile(r"^manylinux_(\d+)_(\d+)_")


# --- torch -----------------------------------------------------------------------------------


def _built_for(package: InstalledPackage, variant: Variant | None) -> tuple[str | None, str | None]:
    if variant is not None and variant.torch is not None:
        return f"{variant.torch.major}.{variant.torch.minor}", "local version label"
    pin = package.torch_requirement
    if pin is not None and pin.built_against:
        return pin.built_against, "Requires-Dist"
    return None, None


def _minor(version: str) -> tuple[int, int] | None:
    try:
        release = Version(version).release
    except InvalidVersion:
        return None
    return release[0], release[1] if len(release) > 1 else 0


def torch_check(
    package: InstalledPackage,
    machine: Machine,
    variant: Variant | None,
    problems: list[Problem],
) -> TorchCheck:
    abi = strictest(o.torch_abi for o in package.objects)
    built, source = _built_for(package, variant)
    base = TorchCheck(abi=abi, built=built, built_from=source, installed=machine.torch)
    if package.name.lower() == "torch":
        return TorchCheck(
            abi=abi, installed=machine.torch, reason="this is torch: nothing to check it against"
        )
    if abi == "none":
        return TorchCheck(abi=abi, installed=machine.torch, ok=True, reason="links no torch")
    evidence = next((o.torch for o in package.objects if o.torch_abi == abi), None)
    symbol = evidence.example if evidence is not None else None
    if machine.torch is None:
        return _torch_missing(package, machine, base, problems)
    if built is None:
        return replace(
            base, reason="the torch it was built for is unknown (no torch pin, no label naming one)"
        )
    have, want = _minor(machine.torch), _minor(built)
    if abi == "exact":
        fits = have == want
        error = f"undefined symbol: {symbol}" if symbol else "undefined symbol: _ZN3c10…"
        requirement = f"torch=={built}.*"
    else:
        fits = have is not None and want is not None and have >= want
        error = f"undefined symbol: {symbol}" if symbol else "undefined symbol: aoti_torch_…"
        requirement = f"torch>={built}"
    if not fits:
        problems.append(
            Problem(
                area="torch",
                message=f"built for {requirement} ({abi} ABI, from its {source}); installed "
                f"torch is {machine.torch}: {error!r}",
                fix=fixes.torch_fix(package, requirement, machine),
            )
        )
        return replace(base, ok=False, reason=f"needs {requirement}")
    return _cxx11abi(package, machine, variant, base, problems)


def _torch_missing(
    package: InstalledPackage, machine: Machine, base: TorchCheck, problems: list[Problem]
) -> TorchCheck:
    if package.torch_requirement is None and base.built is None:  # an optional torch bridge
        return replace(base, reason="does not require torch: loads only where torch is installed")
    requirement = "torch"
    if base.built is not None:
        requirement = f"torch=={base.built}.*" if base.abi == "exact" else f"torch>={base.built}"
    libraries = sorted({lib for o in package.objects for lib in o.torch.libraries})
    error = f"{libraries[0]}: cannot open shared object file" if libraries else "undefined symbol"
    problems.append(
        Problem(
            area="torch",
            message=f"links torch ({base.abi} ABI) but torch is not installed: {error!r}",
            fix=fixes.torch_install(requirement, machine),
        )
    )
    return replace(base, ok=False, reason="torch is not installed")


def _cxx11abi(
    package: InstalledPackage,
    machine: Machine,
    variant: Variant | None,
    base: TorchCheck,
    problems: list[Problem],
) -> TorchCheck:
    wanted = variant.cxx11abi if variant is not None else None
    have = machine.torch_cxx11abi
    if base.abi != "exact" or wanted is None or have is None or wanted == have:
        return replace(base, ok=True, reason=f"fits torch {machine.torch}")
    problems.append(
        Problem(
            area="torch",
            message=f"built for cxx11abi={wanted} (its label); installed torch {machine.torch} "
            f"has cxx11abi={have}: 'undefined symbol: …' for every std::string in the API",
            fix=fixes.reinstall(package, f"that has cxx11abi{str(have).upper()} in its label"),
        )
    )
    return replace(base, ok=False, reason=f"built for cxx11abi={wanted}")


# --- glibc -----------------------------------------------------------------------------------


def _glibc_of(tag: str) -> tuple[int, int] | None:
    """(major, minor) of the glibc a tag needs; None when it says nothing of glibc."""
    platform = tag.rsplit("-", 1)[-1]
    match = _MANYLINUX.match(platform)
    if match:
        return int(match[1]), int(match[2])
    return _LEGACY_MANYLINUX.get(platform.split("_", 1)[0])


def glibc_check(
    package: InstalledPackage, machine: Machine, problems: list[Problem], notes: list[str]
) -> GlibcCheck:
    tags = [str(t) for text in package.tags for t in _tags(text)]
    claims = {tag: need for tag in tags if (need := _glibc_of(tag)) is not None}
    if not tags:
        notes.append("no WHEEL file with tags: its glibc needs are unknown")
        return GlibcCheck(system=machine.glibc)
    if not claims:
        return GlibcCheck(tag=tags[0], system=machine.glibc)
    tag, need = min(claims.items(), key=lambda item: item[1])
    needed = f"{need[0]}.{need[1]}"
    system = _minor(machine.glibc) if machine.glibc else None
    if system is None:
        notes.append(f"this system's glibc is unknown (musl?): {tag} needs glibc {needed}")
        return GlibcCheck(tag=tag, needed=needed, system=machine.glibc)
    ok = need <= system
    if not ok:
        problems.append(
            Problem(
                area="glibc",
                message=f"its wheel is tagged {tag}: needs glibc {needed}; this system has "
                f'{machine.glibc}: "version `GLIBC_{needed}\' not found"',
                fix=fixes.reinstall_fitting(package),
            )
        )
    return GlibcCheck(tag=tag, needed=needed, system=machine.glibc, ok=ok)


def _tags(text: str) -> frozenset[Tag]:
    try:
        return parse_tag(text)
    except ValueError:
        return frozenset()
