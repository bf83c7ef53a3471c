"""The one list of libraries a CUDA wheel must not bundle, and which of them name the CUDA major
in their SONAME (``data/cuda_libs.toml``)."""

from __future__ import annotations

import re
import sys
from fnmatch import fnmatchcase
from importlib import resources

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "CUDA_LIB_PATTERNS",
    "auditwheel_excludes",
    "cuda_major_of",
    "is_cuda_lib",
    "library_stem",
]


def _load() -> tuple[tuple[str, ...], frozenset[str]]:
    text = resources.files("cuship").joinpath("data", "cuda_libs.toml").read_text("utf-8")
    data = tomllib.loads(text)
    patterns = tuple(pattern for group in data["group"] for pattern in group["patterns"])
    return patterns, frozenset(stem for row in data["tracks_cuda"] for stem in row["stems"])


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
