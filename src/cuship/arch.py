"""GPU architecture lists: parse the spellings people use and render the ones tools want.

Accepted, separated by ``;``, ``,`` or spaces: ``8.0``, ``9.0a``, ``10.0f``, ``12.0+PTX``,
``sm_90``, ``sm_90a``, ``compute_90`` (PTX only), ``90``, ``90a``.
Rendered as CMake (``80-real;120``), torch (``8.0;12.0+PTX``) and nvcc ``-gencode`` flags.

This module is the one place an SM or compute-capability spelling is parsed
(``tests/unit/test_arch_spellings.py`` fails on a regex spelling one elsewhere): besides arch
lists, a single SM (:func:`sm_parts`, :func:`is_sm_number`, :func:`is_sm_name`,
:func:`is_relocatable`, :func:`bare_sm`), a compute capability (:func:`is_cc`,
:func:`cc_tuple`), their sort key (:func:`sm_key`), the knowledge tables' strict spellings
(:func:`is_table_sm`, :func:`is_table_cc`), a variant's ``sm_arch`` value (:func:`variant_sm`,
:data:`VARIANT_SM_SCHEMA`) and an arch flag in a build script (:func:`names_arch_flag`).
"""

from __future__ import annotations

import functools
import re

from cuship._record import frozen
from cuship.errors import UsageError

__all__ = [
    "VARIANT_SM_SCHEMA",
    "ArchSpec",
    "ArchTarget",
    "bare_sm",
    "cc_tuple",
    "is_cc",
    "is_relocatable",
    "is_sm_name",
    "is_sm_number",
    "is_table_cc",
    "is_table_sm",
    "names_arch_flag",
    "parse_arch_list",
    "sm_key",
    "sm_of_cc",
    "sm_parts",
    "variant_sm",
]

_CC = re.compile(r"^(?P<major>\d{1,2})\.(?P<minor>\d)(?P<suffix>[af]?)(?P<ptx>\+ptx)?$", re.I)
_SM = re.compile(
    r"^(?:(?P<kind>sm|compute)_)?(?P<num>\d{2,3})(?P<suffix>[af]?)(?P<ptx>\+ptx)?$", re.I
)


_SM_NUMBER = r"(\d{2,3})([af]?)"  # one SM: "90", "90a", "100f"
VARIANT_SM_SCHEMA = "^[0-9]{1,3}[0-9]_(real|virtual)$"  # a variant's sm_arch, as the schemas say


class _Patterns:
    """The spellings below arch lists, each compiled on first use: importing arch (as the index
    and the resolver do, for one spelling or none) compiles none that is not used."""

    @functools.cached_property
    def sm_prefixed(self) -> re.Pattern[str]:  # optionally named "sm_90" (SASS), "compute_90"
        return re.compile(r"(?:sm_|compute_)?" + _SM_NUMBER)

    @functools.cached_property
    def sm_prefixed_anycase(self) -> re.Pattern[str]:
        return re.compile(r"(?:sm_|compute_)?" + _SM_NUMBER, re.IGNORECASE)

    @functools.cached_property
    def sm_bare(self) -> re.Pattern[str]:
        return re.compile(_SM_NUMBER)

    @functools.cached_property
    def sm_any_suffix(self) -> re.Pattern[str]:  # what sm_key orders as a number and a suffix
        return re.compile(r"(\d+)([a-z]*)")

    @functools.cached_property
    def relocatable(self) -> re.Pattern[str]:
        return re.compile(r"(?:sm|compute|lto)_" + _SM_NUMBER)

    @functools.cached_property
    def sm_name_prefix(self) -> re.Pattern[str]:
        return re.compile(r"^(?:sm_|compute_|sm)")

    @functools.cached_property
    def cc_plain(self) -> re.Pattern[str]:  # one minor digit: "12.10" is a version, not a cc
        return re.compile(r"^\d{1,2}\.\d$")

    @functools.cached_property
    def table_sm(self) -> re.Pattern[str]:  # the knowledge tables': ASCII, no leading zero
        return re.compile(r"^[1-9][0-9]{1,2}[af]?$")

    @functools.cached_property
    def table_cc(self) -> re.Pattern[str]:
        return re.compile(r"^[1-9][0-9]?\.[0-9]$")

    @functools.cached_property
    def variant_sm(self) -> re.Pattern[str]:  # the NVIDIA provider's "{X}{m}_real|virtual"
        return re.compile(r"(\d{1,3})(\d)_(real|virtual)")

    @functools.cached_property
    def arch_flag(self) -> re.Pattern[str]:  # a line of a build script that picks GPU arches
        return re.compile(
            r"""["'](?:-gencode|--generate-code|-arch|--gpu-architecture)\b"""  # a flag, quoted
            r"""|["'][^"'\n]*arch=compute_\d"""  # "arch=compute_90,code=sm_90"
            r"""|CMAKE_CUDA_ARCHITECTURES\s+["']?\d"""  # set(CMAKE_CUDA_ARCHITECTURES 80 90)
        )


_P = _Patterns()


def sm_parts(sm: str) -> tuple[int, int, str] | None:
    """``"sm_90a"`` → ``(9, 0, "a")``, ``"compute_120"`` → ``(12, 0, "")``; None for no SM
    (surrounding blanks and case ignored)."""
    match = _P.sm_prefixed.fullmatch(sm.strip().lower())
    if match is None:
        return None
    number = int(match[1])
    return number // 10, number % 10, match[2]


def is_sm_number(text: str) -> bool:
    """``"90"``, ``"90a"``, ``"100f"``: an SM as a record writes it (no prefix, no blanks)."""
    return _P.sm_bare.fullmatch(text) is not None


def is_sm_name(text: str) -> bool:
    """An SM with or without its ``sm_``/``compute_`` prefix, in any case: ``"SM_120"``."""
    return _P.sm_prefixed_anycase.fullmatch(text) is not None


def is_relocatable(text: str) -> bool:
    """Relocatable device code by kind and arch: ``"sm_90"``, ``"compute_90a"``, ``"lto_100"``."""
    return _P.relocatable.fullmatch(text) is not None


def bare_sm(text: str) -> str:
    """``"sm_90a"``, ``"compute_90"``, ``"9.0"`` or ``"90"`` → ``"90a"``/``"90"`` (no check)."""
    return _P.sm_name_prefix.sub("", text.strip().lower()).replace(".", "")


def sm_key(sm: str) -> tuple[int, str]:
    """Sort key for SM strings: ``"90" < "90a" < "100" < "100f" < "120"``."""
    match = _P.sm_any_suffix.fullmatch(sm)
    return (int(match.group(1)), match.group(2)) if match else (1 << 30, sm)


def is_cc(text: str) -> bool:
    """``"9.0"``, ``"12.0"``: a compute capability as MAJOR.MINOR (one minor digit)."""
    return _P.cc_plain.match(text) is not None


def cc_tuple(cc: str) -> tuple[int, int]:
    """``"8.6"`` → ``(8, 6)``, ``"10.0"`` → ``(10, 0)`` (a suffix dropped: ``"9.0a"`` → ``(9, 0)``),
    so capabilities compare as numbers, not strings."""
    major, _, minor = cc.partition(".")
    return int(major), int(minor.rstrip("af") or 0)


def is_table_sm(text: str) -> bool:
    """An SM as the knowledge tables write it: ``"90"``, ``"90a"``, ``"100f"``."""
    return _P.table_sm.match(text) is not None


def is_table_cc(text: str) -> bool:
    """A compute capability as the knowledge tables write it: ``"9.0"``, ``"12.0"``."""
    return _P.table_cc.match(text) is not None


def variant_sm(value: str) -> tuple[int, int, str] | None:
    """A variant's ``sm_arch`` value: ``"90_real"`` → ``(9, 0, "real")``, ``"120_virtual"`` →
    ``(12, 0, "virtual")``; None for anything else."""
    match = _P.variant_sm.fullmatch(value)
    if match is None:
        return None
    return int(match[1]), int(match[2]), match[3]


def names_arch_flag(line: str) -> bool:
    """Whether a line of a build script picks GPU architectures: an nvcc arch flag in a string,
    an ``arch=compute_XY`` gencode, or ``CMAKE_CUDA_ARCHITECTURES`` set to numbers."""
    return _P.arch_flag.search(line) is not None


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
