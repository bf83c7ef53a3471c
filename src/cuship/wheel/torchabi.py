"""Which torch a binary can load into, read from what it imports, and what a wheel says it needs.

A torch extension is one of three kinds, decided by its undefined dynamic symbols:

- ``exact``: it imports libtorch's C++ API (mangled ``c10::``, ``at::``, ``torch::`` or
  ``caffe2::`` names). Those change with every torch minor release, so the wheel must pin the
  torch X.Y it was built against (``torch==X.Y.*``); another torch fails at import with
  ``undefined symbol: _ZN3c10...``.
- ``stable``: it imports only torch's stable C shim (``aoti_torch_*``, ``torch_*``), which torch
  keeps across releases: it loads into the torch it was built against and every newer one
  (``torch>=X.Y``). Such an extension still needs libtorch and libc10 (DT_NEEDED), so the
  libraries it needs cannot tell it from an exact one.
- ``none``: neither. A binary that needs libtorch*/libc10* but imports nothing from them (it
  needs some torch loaded, any release) is counted ``stable``.

The torch a wheel was built against is read from its METADATA (``Requires-Dist: torch==X.Y.*`` or
``torch>=X.Y``) or from its local version label (``+cu130torch2.13``). Everything here is pure:
the caller reads the ELF facts and the metadata.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from packaging.version import InvalidVersion, Version

from cuship._record import frozen
from cuship.errors import InputError
from cuship.wheel.read.filename import canonical_name
from cuship.wheel.read.headers import header_fields

if TYPE_CHECKING:
    from packaging.specifiers import Specifier

# packaging.requirements (its parser, markers and specifiers) is imported where a requirement
# is parsed: `cuship index` imports this module before its first wheel, and many wheels
# require nothing.

__all__ = [
    "TORCH_ABIS",
    "TORCH_SYMBOL_HINTS",
    "TorchAbi",
    "TorchAbiFacts",
    "TorchPin",
    "classify",
    "pin_for",
    "strictest",
    "torch_entries",
    "torch_flavour_needed",
    "torch_pin",
    "torch_requirements",
]

TorchAbi = Literal["none", "stable", "exact"]
TORCH_ABIS: tuple[TorchAbi, ...] = ("none", "stable", "exact")  # weakest first

# Itanium-mangled names whose nested name (N...) starts in torch's C++ namespaces, optionally
# after cv/ref qualifiers (_ZNK..., _ZNKR...): functions, vtables (_ZTVN), typeinfo (_ZTIN) and
# template arguments (...IN2at6TensorE...). "N" must precede the namespace, so that a name that
# merely contains "2at" (foo::at) does not count.
_TORCH_CXX = re.compile(r"N[rVKRO]*(?:3c10|2at|5torch|6caffe2)")
_SHIM_PREFIXES = ("aoti_torch_", "torch_")
# One of these is in every string table that names a symbol classify() counts (a prefilter).
TORCH_SYMBOL_HINTS = (b"3c10", b"2at", b"5torch", b"6caffe2", b"torch_")
_TORCH_LIBRARY = re.compile(r"lib(?:torch|c10)(?:_[a-z0-9_]+)?\.so(?:\.[0-9.]+)?")


@frozen
class TorchAbiFacts:
    """The torch ABI of one shared object and the evidence for it."""

    abi: TorchAbi = "none"
    libraries: tuple[str, ...] = ()  # the libtorch*/libc10* it needs (DT_NEEDED)
    cxx_symbols: int = 0  # undefined c10::/at::/torch::/caffe2:: C++ symbols
    shim_symbols: int = 0  # undefined stable C shim symbols
    example: str | None = None  # one symbol that decided it
    cxx11: bool | None = None  # True: it imports std::__cxx11 names (built with the C++11 ABI)

    @property
    def reason(self) -> str:
        """One line saying why, e.g. ``40 c10/at/torch C++ symbols (_ZN3c10...)``."""
        if self.cxx_symbols:
            return f"imports {self.cxx_symbols} c10/at/torch C++ symbols (e.g. {self.example})"
        if self.shim_symbols:
            return (
                f"imports only torch's stable C shim: {self.shim_symbols} symbols "
                f"(e.g. {self.example})"
            )
        if self.libraries:
            return f"needs {', '.join(self.libraries)} but imports none of their symbols"
        return "needs no torch library and imports no torch symbol"

    def to_json(self) -> dict[str, Any]:
        return {
            "abi": self.abi,
            "libraries": list(self.libraries),
            "cxx_symbols": self.cxx_symbols,
            "shim_symbols": self.shim_symbols,
            "example": self.example,
            "reason": self.reason,
            "cxx11": self.cxx11,
        }


# The torch libraries that exist only in one build flavour of torch: libc10_cuda.so and
# libtorch_cuda.so in CUDA builds (absent from the CPU wheel's torch/lib), libc10_hip.so in ROCm
# builds, libc10_xpu.so in XPU builds.
_FLAVOUR_LIBRARY = re.compile(r"lib(?:torch|c10)_(cuda|hip|xpu)(?:_[a-z0-9_]+)?\.so(?:\.[0-9.]+)?")
_FLAVOURS = {"cuda": "cuda", "hip": "rocm", "xpu": "xpu"}


def torch_flavour_needed(sonames: Iterable[str]) -> str | None:
    """The torch build a binary needing ``sonames`` loads into: ``cuda`` (it links
    ``libc10_cuda.so`` or ``libtorch_cuda.so``), ``rocm``, ``xpu``, or None (any build)."""
    for soname in sonames:
        match = _FLAVOUR_LIBRARY.fullmatch(soname)
        if match:
            return _FLAVOURS[match[1]]
    return None


def is_torch_library(soname: str) -> bool:
    """``libtorch.so``, ``libtorch_cpu.so``, ``libc10_cuda.so``, ... (not libtorchaudio's)."""
    return _TORCH_LIBRARY.fullmatch(soname) is not None


def is_torch_cxx_symbol(name: str) -> bool:
    """A mangled C++ name in torch's namespaces (c10, at, torch, caffe2)."""
    return name.startswith("_Z") and _TORCH_CXX.search(name) is not None


def is_shim_symbol(name: str) -> bool:
    """A C symbol of torch's stable shim (``aoti_torch_get_dim``, ``torch_call_dispatcher``)."""
    return name.startswith(_SHIM_PREFIXES)


def classify(needed: Iterable[str], undefined: Iterable[str]) -> TorchAbiFacts:
    """The torch ABI of a shared object from its DT_NEEDED entries and undefined symbols."""
    libraries = tuple(lib for lib in needed if is_torch_library(lib))
    cxx = [name for name in undefined if is_torch_cxx_symbol(name)]
    if cxx:
        cxx11 = True if any("__cxx11" in name for name in cxx) else None
        return TorchAbiFacts(
            abi="exact",
            libraries=libraries,
            cxx_symbols=len(cxx),
            example=min(cxx, key=len),
            cxx11=cxx11,
        )
    shim = [name for name in undefined if is_shim_symbol(name)]
    if shim or libraries:
        return TorchAbiFacts(
            abi="stable",
            libraries=libraries,
            shim_symbols=len(shim),
            example=min(shim, key=len) if shim else None,
        )
    return TorchAbiFacts()


def strictest(abis: Iterable[TorchAbi]) -> TorchAbi:
    """The ABI a wheel has when it holds objects of ``abis``: exact > stable > none."""
    return max(abis, key=TORCH_ABIS.index, default="none")


@frozen
class TorchPin:
    """What a wheel's torch requirement admits: one minor version, a minimum, or neither."""

    requirement: str  # as written, e.g. "torch==2.13.*"
    exact: str | None = None  # "2.13" when only torch 2.13.x is admitted
    minimum: str | None = None  # "2.13" for torch>=2.13

    @property
    def built_against(self) -> str | None:
        """The torch X.Y the requirement names (the one the wheel was built against)."""
        return self.exact or self.minimum

    def to_json(self) -> dict[str, Any]:
        return {"requirement": self.requirement, "exact": self.exact, "minimum": self.minimum}


def _header_values(metadata: str, name: str) -> list[str]:
    """The values of header ``name`` (lower case) in METADATA text (:func:`header_fields`)."""
    return [value for field, value in header_fields(metadata) if field == name]


def torch_requirements(metadata: str, *, source: str) -> tuple[str, ...]:
    """The unconditional ``Requires-Dist`` entries on torch in METADATA text.

    Entries under an extra (``; extra == "test"``) do not count: plain ``pip install`` skips
    them. An entry that is not a valid requirement raises :class:`InputError`.
    """
    return torch_entries(_header_values(metadata, "requires-dist"), source=source)


def torch_entries(requires_dist: Iterable[str], *, source: str) -> tuple[str, ...]:
    """:func:`torch_requirements` of ``Requires-Dist`` values already read from METADATA (as
    :func:`_header_values` reads them)."""
    found: list[str] = []
    for line in requires_dist:
        try:
            entry = _torch_entry(line)
        except _BadRequirement as err:
            raise InputError(
                f"{source!r}: Requires-Dist {str(line)!r} is not a valid requirement: {err}",
                hint="fix the project's dependencies and rebuild the wheel",
            ) from err.__cause__
        if entry is not None:
            found.append(entry)
    return tuple(found)


class _BadRequirement(ValueError):
    """packaging's InvalidRequirement, raised again as a class this module has imported."""


@functools.lru_cache(maxsize=8192)  # an index's wheels repeat the same few requirements
def _torch_entry(line: str) -> str | None:
    """The requirement ``line`` as written back, when it is an unconditional one on torch."""
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        requirement = Requirement(line)
    except InvalidRequirement as err:
        raise _BadRequirement(str(err)) from err
    if canonical_name(requirement.name) != "torch":
        return None
    if requirement.marker is not None and "extra" in str(requirement.marker):
        return None
    return str(requirement)


def torch_pin(requirements: Sequence[str]) -> TorchPin | None:
    """What the torch requirement(s) admit; None without any."""
    if not requirements:
        return None
    from packaging.requirements import Requirement

    specifiers = [s for text in requirements for s in Requirement(text).specifier]
    return TorchPin(
        requirement=", ".join(requirements),
        exact=_exact_minor(specifiers),
        minimum=_minimum_minor(specifiers),
    )


def _minor(version: str) -> tuple[int, int] | None:
    try:
        release = Version(version.removesuffix(".*")).release
    except InvalidVersion:
        return None
    return (release[0], release[1] if len(release) > 1 else 0)


def _text(minor: tuple[int, int] | None) -> str | None:
    return None if minor is None else f"{minor[0]}.{minor[1]}"


def _pins_minor(spec: Specifier) -> bool:
    """``==X.Y.*``, ``==X.Y.Z`` (or ``==X.Y``) and ``~=X.Y.Z`` admit one minor version."""
    if spec.operator == "~=":
        return spec.version.count(".") >= 2
    if spec.operator in ("==", "==="):
        return not spec.version.endswith(".*") or spec.version.count(".") >= 2
    return False


def _exact_minor(specifiers: Sequence[Specifier]) -> str | None:
    """X.Y when the specifiers admit only X.Y.*; ``>=X.Y`` with ``<X.(Y+1)`` counts too."""
    for spec in specifiers:
        if _pins_minor(spec):
            return _text(_minor(spec.version))
    low = _minimum(specifiers)
    if low is None:
        return None
    below = (low[0], low[1] + 1)
    capped = any(s.operator == "<" and _minor(s.version) == below for s in specifiers)
    return _text(low) if capped else None


def _minimum(specifiers: Sequence[Specifier]) -> tuple[int, int] | None:
    lows = [_minor(s.version) for s in specifiers if s.operator in (">=", "~=", "==")]
    return max((low for low in lows if low is not None), default=None)


def _minimum_minor(specifiers: Sequence[Specifier]) -> str | None:
    return _text(_minimum(specifiers))


def pin_for(abi: TorchAbi, built: str) -> str | None:
    """The ``Requires-Dist`` a wheel of ``abi`` built against torch ``built`` (X.Y) must carry:
    ``torch==X.Y.*`` (exact, the torchvision convention), ``torch>=X.Y`` (stable), None (none)."""
    minor = _minor(built)
    if minor is None:
        raise InputError(f"{built!r} is not a torch version", hint="write it like 2.13")
    text = f"{minor[0]}.{minor[1]}"
    return {"exact": f"torch=={text}.*", "stable": f"torch>={text}", "none": None}[abi]
