"""The one list of libraries a CUDA wheel must not bundle (``data/cuda_libs.toml``)."""

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
    "auditwheel_excludes",
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
class CudaLibsFile:
    """cuda_libs.toml: the shared libraries a CUDA wheel must never bundle."""

    group: tuple[CudaLibGroup, ...] = field_doc("One table per group.", non_empty=True)


def _load_patterns() -> tuple[str, ...]:
    raw = schema.read_toml(DATA_FILE)
    file = schema.load(CudaLibsFile, raw, source=str(DATA_FILE), strict=True)
    return tuple(pattern for group in file.group for pattern in group.patterns)


CUDA_LIB_PATTERNS: tuple[str, ...] = _load_patterns()

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
