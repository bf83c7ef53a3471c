"""The one list of libraries a CUDA wheel must not bundle (``data/cuda_libs.toml``)."""

from __future__ import annotations

import re
import sys
from fnmatch import fnmatchcase
from importlib import resources

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["CUDA_LIB_PATTERNS", "auditwheel_excludes", "is_cuda_lib", "library_stem"]


def _load_patterns() -> tuple[str, ...]:
    text = resources.files("cuship").joinpath("data", "cuda_libs.toml").read_text("utf-8")
    groups = tomllib.loads(text)["group"]
    return tuple(pattern for group in groups for pattern in group["patterns"])


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
