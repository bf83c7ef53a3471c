"""The one list of libraries a CUDA wheel must not bundle, and which of them name the CUDA major
in their SONAME (``data/cuda_libs.toml``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from cuship import schema
from cuship.schema import field_doc

__all__ = [
    "CUDA_LIB_PATTERNS",
    "CudaLibGroup",
    "CudaLibsFile",
    "TracksCuda",
    "auditwheel_excludes",
    "cuda_major_of",
    "is_cuda_lib",
    "library_stem",
]

DATA_FILE = Path(__file__).parent.parent / "data" / "cuda_libs.toml"


@dataclass(frozen=True, slots=True, kw_only=True)
class CudaLibGroup:
    """Libraries that come from one place (the driver, a toolkit wheel, torch)."""

    name: str = field_doc("What the libraries are.")
    source: str = field_doc("Where users get them instead, and what bundling them broke.")
    patterns: tuple[str, ...] = field_doc(
        'fnmatch globs on a library\'s stem (the file name before ".so"): "libcublas*".',
        non_empty=True,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class TracksCuda:
    """Libraries versioned with the CUDA toolkit: ``libcudart.so.13`` belongs to CUDA 13."""

    name: str = field_doc("What the libraries are.")
    source: str = field_doc("Where their SONAMEs are published.")
    stems: tuple[str, ...] = field_doc('Library stems: "libcudart".', non_empty=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class CudaLibsFile:
    """cuda_libs.toml: the shared libraries a CUDA wheel must never bundle."""

    group: tuple[CudaLibGroup, ...] = field_doc("One table per group.", non_empty=True)
    tracks_cuda: tuple[TracksCuda, ...] = field_doc(
        "Libraries whose SONAME major is the CUDA major they belong to.", default=()
    )


def _load() -> tuple[tuple[str, ...], frozenset[str]]:
    raw = schema.read_toml(DATA_FILE)
    file = schema.load(CudaLibsFile, raw, source=str(DATA_FILE), strict=True)
    patterns = tuple(pattern for group in file.group for pattern in group.patterns)
    return patterns, frozenset(stem for row in file.tracks_cuda for stem in row.stems)


CUDA_LIB_PATTERNS, _TRACKS_CUDA = _load()
_SONAME_MAJOR = re.compile(r"\.so\.(\d+)")

# auditwheel renames what it bundles to "<stem>-<first 8 hex of sha256>.so.<version>".
_HASHED = re.compile(r"-[0-9a-f]{8}$")


def library_stem(filename: str) -> str:
    """``"dir/libcudart-1a2b3c4d.so.13"`` -> ``"libcudart"``; ``"libfoo.so"`` -> ``"libfoo"``."""
    base = filename.rsplit("/", 1)[-1]
    stem = base.split(".so", 1)[0]
    return _HASHED.sub("", stem)


def is_cuda_lib(filename: str) -> bool:
    """True when ``filename`` (a path, a file name or a SONAME) is a library on the exclude list."""
    stem = library_stem(filename)
    return any(fnmatchcase(stem, pattern) for pattern in CUDA_LIB_PATTERNS)


def auditwheel_excludes() -> tuple[str, ...]:
    """The ``--exclude`` globs for ``auditwheel repair`` (matched against SONAMEs)."""
    return tuple(f"{pattern}.so*" for pattern in CUDA_LIB_PATTERNS)


def cuda_major_of(soname: str) -> int | None:
    """The CUDA major a needed library belongs to, when its SONAME says it: ``libcudart.so.13``
    → 13, ``libcublasLt-0badc0de.so.12`` → 12; None for libraries that version on their own
    (``libcufft.so.11``) and for unversioned names."""
    if library_stem(soname) not in _TRACKS_CUDA:
        return None
    match = _SONAME_MAJOR.search(soname.rsplit("/", 1)[-1])
    return int(match[1]) if match else None
