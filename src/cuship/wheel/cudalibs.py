"""The one list of libraries a CUDA wheel must not bundle, which of them name the CUDA major in
their SONAME, the NVIDIA libraries wheels bundle as they are, and each CUDA major's libraries by
SONAME with the PyPI wheel that carries them (``data/cuda_libs.toml``)."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from pathlib import Path

from cuship import schema
from cuship._record import frozen
from cuship.schema import field_doc

__all__ = [
    "CUDA_LIB_PATTERNS",
    "CudaLibGroup",
    "CudaLibsFile",
    "ToolkitLib",
    "ToolkitLibs",
    "TracksCuda",
    "auditwheel_excludes",
    "cuda_major_of",
    "is_cuda_lib",
    "is_driver_lib",
    "is_nvidia_lib",
    "is_vendor_lib",
    "library_stem",
    "nvidia_requirements",
    "toolkit_libraries",
    "toolkit_majors",
    "wheel_for",
]

DATA_FILE = Path(__file__).parent.parent / "data" / "cuda_libs.toml"


@frozen
class CudaLibGroup:
    """Libraries that come from one place (the driver, a toolkit wheel, torch)."""

    name: str = field_doc("What the libraries are.")
    source: str = field_doc("Where users get them instead, and what bundling them broke.")
    patterns: tuple[str, ...] = field_doc(
        'fnmatch globs on a library\'s stem (the file name before ".so"): "libcublas*".',
        non_empty=True,
    )


@frozen
class TracksCuda:
    """Libraries versioned with the CUDA toolkit: ``libcudart.so.13`` belongs to CUDA 13."""

    name: str = field_doc("What the libraries are.")
    source: str = field_doc("Where their SONAMEs are published.")
    stems: tuple[str, ...] = field_doc('Library stems: "libcudart".', non_empty=True)


@frozen
class ToolkitLib:
    """One library of a CUDA toolkit: its SONAME and the PyPI wheel that carries it."""

    soname: str = field_doc('The SONAME: "libcudart.so.12".')
    wheel: str = field_doc('The requirement that installs it: "nvidia-cuda-runtime-cu12".')
    with_torch: bool = field_doc(
        "Whether a CUDA build of torch from PyPI brings it (its dependencies hold it).",
        default=True,
    )
    extra: str | None = field_doc(
        'The extra of the cuda-toolkit meta-package that installs it ("cudart").', default=None
    )


@frozen
class ToolkitLibs:
    """The shared libraries of one CUDA major."""

    cuda: int = field_doc("The CUDA major.")
    source: str = field_doc("Where the SONAMEs and wheel names are published.")
    libraries: tuple[ToolkitLib, ...] = field_doc("Its libraries.", non_empty=True)


@frozen
class CudaLibsFile:
    """cuda_libs.toml: the shared libraries a CUDA wheel must never bundle."""

    group: tuple[CudaLibGroup, ...] = field_doc("One table per group.", non_empty=True)
    tracks_cuda: tuple[TracksCuda, ...] = field_doc(
        "Libraries whose SONAME major is the CUDA major they belong to.", default=()
    )
    vendor: tuple[CudaLibGroup, ...] = field_doc(
        "NVIDIA libraries that wheels bundle as they are (their device code is NVIDIA's).",
        default=(),
    )
    toolkit: tuple[ToolkitLibs, ...] = field_doc(
        "Each CUDA major's libraries by SONAME, with the wheel that carries each.", default=()
    )


@frozen(kw_only=False)
class _Data:
    patterns: tuple[str, ...]
    tracks: frozenset[str]
    vendor: tuple[str, ...]
    toolkits: tuple[ToolkitLibs, ...]


def _load() -> _Data:
    raw = schema.read_toml(DATA_FILE)
    file = schema.load(CudaLibsFile, raw, source=str(DATA_FILE), strict=True)
    return _Data(
        patterns=tuple(pattern for group in file.group for pattern in group.patterns),
        tracks=frozenset(stem for row in file.tracks_cuda for stem in row.stems),
        vendor=tuple(pattern for group in file.vendor for pattern in group.patterns),
        toolkits=file.toolkit,
    )


_DATA = _load()
CUDA_LIB_PATTERNS = _DATA.patterns
_SONAME_MAJOR = re.compile(r"\.so\.(\d+)")

# auditwheel renames what it bundles to "<stem>-<first 8 hex of sha256>.so.<version>"; other
# repair tools (and auditwheel for some wheels: torchvision.libs/libcudart.faf08d9a.so.13) put
# the hash after a dot.
_HASHED = re.compile(r"[-.][0-9a-f]{8}$")
_DRIVER_STEMS = frozenset({"libcuda", "libnvidia-ml"})


def library_stem(filename: str) -> str:
    """``"dir/libcudart-1a2b3c4d.so.13"`` and ``"libcudart.faf08d9a.so.13"`` -> ``"libcudart"``;
    ``"libfoo.so"`` -> ``"libfoo"``."""
    base = filename.rsplit("/", 1)[-1]
    stem = base.split(".so", 1)[0]
    return _HASHED.sub("", stem)


def _globs(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One expression matching what any of the fnmatch ``patterns`` matches (as fnmatchcase:
    case-sensitive); a wheel of thousands of members asks of each shared object."""
    joined = "|".join(f"(?:{fnmatch.translate(pattern)})" for pattern in patterns)
    return re.compile(joined or "(?!)")  # no pattern: nothing matches


_CUDA_GLOBS = _globs(CUDA_LIB_PATTERNS)
_VENDOR_GLOBS = _globs(_DATA.vendor)


def is_cuda_lib(filename: str) -> bool:
    """True when ``filename`` (a path, a file name or a SONAME) is a library on the exclude list."""
    return _CUDA_GLOBS.match(library_stem(filename)) is not None


def is_vendor_lib(filename: str) -> bool:
    """True for an NVIDIA library that wheels bundle as it is (``libnvjpeg``, ``libnpp*``)."""
    return _VENDOR_GLOBS.match(library_stem(filename)) is not None


def is_driver_lib(filename: str) -> bool:
    """True for the driver's own libraries (``libcuda.so.1``, ``libnvidia-ml.so.1``)."""
    return library_stem(filename) in _DRIVER_STEMS


def is_nvidia_lib(filename: str) -> bool:
    """True for a library of NVIDIA's CUDA stack that is not torch's: the driver's, the
    toolkit's and the ones wheels bundle as they are."""
    stem = library_stem(filename)
    if stem.startswith(("libtorch", "libc10")):
        return False
    return is_cuda_lib(filename) or is_vendor_lib(filename) or stem in _DRIVER_STEMS


def toolkit_libraries(cuda: int, *, with_torch: bool = False) -> tuple[ToolkitLib, ...]:
    """The libraries of CUDA major ``cuda`` that cuship knows (those a CUDA torch of that major
    brings, with ``with_torch``); none for a major it does not know."""
    return tuple(
        lib
        for toolkit in _DATA.toolkits
        if toolkit.cuda == cuda
        for lib in toolkit.libraries
        if lib.with_torch or not with_torch
    )


_NVIDIA_REQUIREMENT = re.compile(
    r"^\s*(nvidia-[A-Za-z0-9._-]+|cuda-toolkit|cuda-pathfinder|cuda-bindings|cuda-core)\b",
    re.IGNORECASE,
)


def nvidia_requirements(requires_dist: Iterable[str]) -> tuple[str, ...]:
    """The Requires-Dist entries that install NVIDIA libraries (``nvidia-*``, ``cuda-toolkit``)
    or open them (``cuda-pathfinder`` and the packages built on it), markers and extras kept as
    written."""
    return tuple(line.strip() for line in requires_dist if _NVIDIA_REQUIREMENT.match(line))


def toolkit_majors() -> tuple[int, ...]:
    """The CUDA majors whose libraries cuship knows, oldest first."""
    return tuple(sorted({toolkit.cuda for toolkit in _DATA.toolkits}))


def wheel_for(soname: str, cuda: int | None = None) -> str | None:
    """The PyPI requirement that installs the library ``soname`` (``libcudart.so.12`` ->
    ``nvidia-cuda-runtime-cu12``), when cuship knows one; of CUDA major ``cuda`` when given
    (``libcudnn.so.9`` is in every major's wheels: ``nvidia-cudnn-cu13`` for a CUDA 13
    object), else of the major its SONAME names, else the newest that has it."""
    wanted = soname.rsplit("/", 1)[-1]
    major = cuda if cuda is not None else cuda_major_of(wanted)
    found = [
        (toolkit.cuda, lib.wheel)
        for toolkit in _DATA.toolkits
        for lib in toolkit.libraries
        if lib.soname == wanted
    ]
    same = [wheel for number, wheel in found if number == major]
    if same:
        return same[0]
    return found[-1][1] if found and major is None else None


def auditwheel_excludes() -> tuple[str, ...]:
    """The ``--exclude`` globs for ``auditwheel repair`` (matched against SONAMEs)."""
    return tuple(f"{pattern}.so*" for pattern in CUDA_LIB_PATTERNS)


def cuda_major_of(soname: str) -> int | None:
    """The CUDA major a needed library belongs to, when its SONAME says it: ``libcudart.so.13``
    → 13, ``libcublasLt-0badc0de.so.12`` → 12; None for libraries that version on their own
    (``libcufft.so.11``) and for unversioned names."""
    if library_stem(soname) not in _DATA.tracks:
        return None
    match = _SONAME_MAJOR.search(soname.rsplit("/", 1)[-1])
    return int(match[1]) if match else None
