"""GPU architecture lists: parse the spellings people use and render the ones tools want.

Accepted, separated by ``;``, ``,`` or spaces: ``8.0``, ``9.0a``, ``10.0f``, ``12.0+PTX``,
``sm_90``, ``sm_90a``, ``compute_90`` (PTX only), ``90``, ``90a``.
Rendered as CMake (``80-real;120``), torch (``8.0;12.0+PTX``) and nvcc ``-gencode`` flags.
"""

from __future__ import annotations

import re

from cuship._record import frozen
from cuship.errors import UsageError

__all__ = ["ArchSpec", "ArchTarget", "parse_arch_list", "sm_of_cc"]

_CC = re.compile(r"^(?P<major>\d{1,2})\.(?P<minor>\d)(?P<suffix>[af]?)(?P<ptx>\+ptx)?$", re.I)
_SM = re.compile(
    r"^(?:(?P<kind>sm|compute)_)?(?P<num>\d{2,3})(?P<suffix>[af]?)(?P<ptx>\+ptx)?$", re.I
)


def sm_of_cc(cc: str) -> str:
    """``"9.0"`` → ``"90"``, ``"12.0"`` → ``"120"``, ``"9.0a"`` → ``"90a"``."""
    match = _CC.match(cc.strip())
    if match is None:
        raise UsageError(
            f"not a compute capability: {cc!r}", hint="write it as MAJOR.MINOR, e.g. '9.0'"
        )
    return f"{match['major']}{match['minor']}{match['suffix'].lower()}"


@frozen
class ArchTarget:
    """One architecture: SASS for ``sm`` and/or PTX for its virtual ``compute_`` arch."""

    sm: str
    sass: bool = True
    ptx: bool = False

    @property
    def number(self) -> int:
        return int(self.sm.rstrip("af"))

    @property
    def base(self) -> str:
        """The sm without its ``a``/``f`` suffix (PTX is for the base virtual arch)."""
        return self.sm.rstrip("af")

    @property
    def cc(self) -> str:
        """``"120"`` → ``"12.0"`` (suffix kept: ``"90a"`` → ``"9.0a"``)."""
        suffix = self.sm[len(self.base) :]
        return f"{self.number // 10}.{self.number % 10}{suffix}"


@frozen
class ArchSpec:
    """An ordered, de-duplicated list of :class:`ArchTarget`."""

    targets: tuple[ArchTarget, ...]

    def __str__(self) -> str:
        return self.torch

    @property
    def sass(self) -> tuple[str, ...]:
        return tuple(t.sm for t in self.targets if t.sass)

    @property
    def ptx(self) -> tuple[str, ...]:
        return tuple(t.base for t in self.targets if t.ptx)

    @property
    def torch(self) -> str:
        """TORCH_CUDA_ARCH_LIST spelling: ``8.0;9.0;12.0+PTX``."""
        parts = []
        for t in self.targets:
            if t.sass:
                parts.append(t.cc + ("+PTX" if t.ptx else ""))
            else:
                parts.append(f"compute_{t.base}")
        return ";".join(parts)

    @property
    def cmake(self) -> str:
        """CMAKE_CUDA_ARCHITECTURES spelling: ``80-real;90-real;120`` (``120`` = SASS + PTX)."""
        parts = []
        for t in self.targets:
            if t.sass and t.ptx and t.sm == t.base:
                parts.append(t.sm)
            else:
                if t.sass:
                    parts.append(f"{t.sm}-real")
                if t.ptx:
                    parts.append(f"{t.base}-virtual")
        return ";".join(parts)

    @property
    def gencode(self) -> tuple[str, ...]:
        """nvcc flags, one ``-gencode=arch=…,code=…`` per target."""
        flags = []
        for t in self.targets:
            if t.sass:
                flags.append(f"-gencode=arch=compute_{t.sm},code=sm_{t.sm}")
            if t.ptx:
                flags.append(f"-gencode=arch=compute_{t.base},code=compute_{t.base}")
        return tuple(flags)

    @property
    def slug(self) -> str:
        """A short id for job names: ``sm80_90_120ptx``."""
        parts = [t.sm + ("ptx" if t.ptx else "") if t.sass else f"c{t.base}" for t in self.targets]
        return "sm" + "_".join(parts)

    def without(self, sms: frozenset[str]) -> ArchSpec:
        return ArchSpec(targets=tuple(t for t in self.targets if t.sm not in sms))


def _parse_one(token: str) -> ArchTarget:
    match = _CC.match(token)
    if match is not None:
        sm = f"{match['major']}{match['minor']}{match['suffix'].lower()}"
        return ArchTarget(sm=sm, sass=True, ptx=bool(match["ptx"]))
    match = _SM.match(token)
    if match is not None:
        sm = f"{match['num']}{match['suffix'].lower()}"
        if (match["kind"] or "").lower() == "compute":
            return ArchTarget(sm=sm, sass=False, ptx=True)
        return ArchTarget(sm=sm, sass=True, ptx=bool(match["ptx"]))
    raise UsageError(
        f"not a GPU architecture: {token!r}",
        hint="use compute capabilities like '8.0;9.0;12.0+PTX' or sm names like 'sm_90a'",
    )


def parse_arch_list(text: str) -> ArchSpec:
    """Parse an arch list; duplicates merge (``9.0`` and ``9.0+PTX`` give one target with both)."""
    tokens = [t for t in re.split(r"[;,\s]+", text.strip()) if t]
    if not tokens:
        raise UsageError(f"empty architecture list: {text!r}", hint="name at least one, e.g. '9.0'")
    merged: dict[str, ArchTarget] = {}
    for token in tokens:
        target = _parse_one(token)
        seen = merged.get(target.sm)
        if seen is not None:
            target = ArchTarget(
                sm=target.sm, sass=seen.sass or target.sass, ptx=seen.ptx or target.ptx
            )
        merged[target.sm] = target
    return ArchSpec(targets=tuple(merged.values()))
