"""The glibc floor of a wheel (pure over a report): which glibc its platform tag needs, and which
versioned symbols of its shared objects need more than a ``manylinux_X_Y`` floor allows.

What a floor allows comes from auditwheel's own policy table (``manylinux-policy.json``: the
GLIBC, GLIBCXX, CXXABI, GCC, ... versions of each manylinux policy) when auditwheel is
installed; without it only ``GLIBC_x.y`` versions are judged, by number.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from cuship import _read
from cuship._record import frozen
from cuship.errors import UsageError
from cuship.wheel.audit import WheelReport
from cuship.wheel.read.elf import VersionNeed

__all__ = ["Glibc", "Offender", "floor_problem", "offenders", "parse_floor", "tag_glibc"]

Glibc = tuple[int, int]

# PEP 600: the legacy aliases and the glibc each stands for.
_LEGACY = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}
_PERENNIAL = re.compile(r"^manylinux_(\d+)_(\d+)_(\w+)$")
_LEGACY_TAG = re.compile(r"^(manylinux1|manylinux2010|manylinux2014)_(\w+)$")


def parse_floor(text: str) -> Glibc:
    """``"2_28"`` (or ``"manylinux_2_28"``) → ``(2, 28)``."""
    major, _, minor = text.strip().removeprefix("manylinux_").partition("_")
    if not (major.isdigit() and minor.isdigit()):
        raise UsageError(f"{text!r} is not a glibc floor", hint='write it like "2_28"')
    return int(major), int(minor)


def floor_name(floor: Glibc) -> str:
    return f"manylinux_{floor[0]}_{floor[1]}"


def _platform(tag: str) -> tuple[Glibc, str] | None:
    platform = tag.rsplit("-", 1)[-1]
    if match := _PERENNIAL.match(platform):
        return (int(match[1]), int(match[2])), match[3]
    if match := _LEGACY_TAG.match(platform):
        return _LEGACY[match[1]], match[2]
    return None


def tag_glibc(tags: Iterable[str]) -> tuple[Glibc, str] | None:
    """The glibc a wheel's platform tags need, and its architecture: the lowest of its
    manylinux tags (installers take the wheel wherever any one of them fits). None for a
    wheel without a manylinux tag (``linux_x86_64``, ``any``)."""
    found = [p for p in (_platform(tag) for tag in tags) if p is not None]
    return min(found) if found else None


@functools.cache
def _policies() -> tuple[Mapping[str, object], ...]:
    """auditwheel's manylinux policies, read from its package data (auditwheel not imported)."""
    spec = importlib.util.find_spec("auditwheel")
    places = spec.submodule_search_locations if spec else None
    if not places:
        return ()
    try:
        path = Path(next(iter(places))) / "policy" / "manylinux-policy.json"
        data = _read.read_json(path, _read.CONFIG)
    except (OSError, _read.Refused, StopIteration):
        return ()
    return tuple(p for p in data if isinstance(p, dict))


def _allowed(floor: Glibc, arch: str) -> Mapping[str, frozenset[str]] | None:
    """The symbol versions the ``manylinux_X_Y`` policy allows on ``arch``, by prefix."""
    name = floor_name(floor)
    policy = next((p for p in _policies() if p.get("name") == name), None)
    table = policy.get("symbol_versions", {}) if policy else None
    versions = table.get(arch) if isinstance(table, dict) else None
    if not isinstance(versions, dict):
        return None
    return {str(k): frozenset(map(str, v)) for k, v in versions.items()}


def _too_new(need: VersionNeed, floor: Glibc, allowed: Mapping[str, frozenset[str]] | None) -> bool:
    prefix, _, number = need.version.partition("_")
    if allowed is not None and prefix in allowed:
        return number not in allowed[prefix]
    if prefix != "GLIBC":
        return False  # a library's own version (libcudart.so.13): no business of the floor
    parts = number.split(".")
    if not all(p.isdigit() for p in parts) or len(parts) < 2:
        return False
    return (int(parts[0]), int(parts[1])) > floor


@frozen
class Offender:
    """A shared object's symbol version above the floor, and the symbols bound to it."""

    path: str
    need: VersionNeed

    def describe(self, limit: int = 4) -> str:
        names = self.need.symbols
        shown = ", ".join(names[:limit]) + (
            f", +{len(names) - limit} more" if len(names) > limit else ""
        )
        return f"{self.need.version} ({shown or 'no symbol'}) in {self.path}"


def offenders(report: WheelReport, floor: Glibc, arch: str = "x86_64") -> tuple[Offender, ...]:
    """Every symbol version of the wheel's shared objects that ``floor`` does not allow."""
    allowed = _allowed(floor, arch)
    return tuple(
        Offender(path=x.path, need=need)
        for x in report.extensions
        for need in x.versions
        if _too_new(need, floor, allowed)
    )


def floor_problem(report: WheelReport, floor: Glibc) -> str | None:
    """Why ``report``'s wheel is above ``floor`` (its tag, the symbols that raise it and the
    fix), or None when it is within it."""
    tagged = tag_glibc(report.tags)
    arch = tagged[1] if tagged else "x86_64"
    found = offenders(report, floor, arch)
    if tagged is not None and tagged[0] <= floor:
        return None
    if tagged is None and not found:
        return None
    need = tagged[0] if tagged else None
    what = (
        f"its platform tag {floor_name(need)} needs glibc {need[0]}.{need[1]}"
        if need
        else "it has no manylinux tag"
    )
    why = "; ".join(o.describe() for o in found[:4]) or "symbol versions auditwheel counted"
    raise_to = f'[build] manylinux = "{need[0]}_{need[1]}"' if need else "a higher floor"
    return (
        f"above the glibc floor {floor_name(floor)}: {what}, raised by {why}; build it where "
        f"glibc is {floor[0]}.{floor[1]} or older (a CUDA devel image on such a distribution "
        f"as [build] image, with --mode container), or raise the floor ({raise_to})"
    )
