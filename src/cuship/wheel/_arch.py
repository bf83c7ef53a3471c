"""Parse GPU arch lists as people write them: ``"8.0;9.0;10.0;12.0+PTX"``, ``"90a"``, ``"sm_90"``.

Each item becomes an :class:`ArchTarget` holding the SM string cuship uses everywhere
(``"80"``, ``"90a"``, ``"100f"``) and whether PTX is wanted for it (``+PTX`` or ``compute_XX``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cuship.errors import UsageError

__all__ = ["ArchTarget", "parse_arch_list"]

_ITEM = re.compile(
    r"(?P<prefix>sm_|compute_)?"
    r"(?:(?P<major>\d+)\.(?P<minor>\d)|(?P<packed>\d{2,3}))"
    r"(?P<suffix>[af])?"
    r"(?P<ptx>\+ptx)?",
    re.IGNORECASE,
)
_SEPARATORS = re.compile(r"[;,\s]+")


@dataclass(frozen=True, slots=True, kw_only=True)
class ArchTarget:
    """One requested architecture: SASS for ``sm``, and PTX for it too when ``ptx``."""

    sm: str
    sass: bool = True
    ptx: bool = False


def parse_arch_list(spec: str) -> tuple[ArchTarget, ...]:
    """``"8.0;9.0a;12.0+PTX"`` -> targets for 80, 90a, 120 (+PTX). Bad items raise UsageError."""
    items = [item for item in _SEPARATORS.split(spec.strip()) if item]
    if not items:
        raise UsageError(f"empty arch list {spec!r}", hint='write e.g. "8.0;9.0;12.0+PTX"')
    return tuple(_parse_item(item, spec) for item in items)


def _parse_item(item: str, spec: str) -> ArchTarget:
    match = _ITEM.fullmatch(item)
    if match is None:
        raise UsageError(
            f"cannot read arch {item!r} in {spec!r}",
            hint='use "8.0", "9.0a", "10.0f", "12.0+PTX", "90a", "sm_90" or "compute_90"',
        )
    number = match["packed"] or f"{match['major']}{match['minor']}"
    sm = f"{int(number)}{(match['suffix'] or '').lower()}"
    if (match["prefix"] or "").lower() == "compute_":
        return ArchTarget(sm=sm, sass=False, ptx=True)
    return ArchTarget(sm=sm, ptx=match["ptx"] is not None)
