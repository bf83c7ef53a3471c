"""What a released sdist holds, read from its unpacked files (bounded, never run): whether it has
CUDA device code to compile, its name and version (PKG-INFO), and what its build script steers.

Device code is found, not asked: a ``.cu``/``.cuh`` source outside its tests, docs and examples;
``CUDAExtension`` in setup.py; ``enable_language(CUDA)``, ``project(... CUDA)``, ``LANGUAGES
... CUDA`` or ``cuda_add_library`` in the top CMakeLists.txt; a ``[tool.scikit-build]`` table
that names CUDA. A package's ``device_code`` key overrides what
is found, either way.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from email.parser import HeaderParser
from pathlib import Path

from cuship import _read
from cuship.config.script import BuildScript, read_build_script, read_text

__all__ = ["DeviceCode", "Sdist", "find_device_code", "read_pkg_info", "read_sdist"]

_DEVICE_SUFFIXES = (".cu", ".cuh")
_SKIPPED_DIRS = frozenset(
    {"test", "tests", "testing", "doc", "docs", "example", "examples", "benchmark",
     "benchmarks", ".git", "__pycache__"}
)  # fmt: skip
_MAX_FILES = 20_000  # a walk of an sdist stops here (a kernel library has a few thousand)
_CMAKE_CUDA = re.compile(
    r"enable_language\s*\(\s*CUDA\b"
    r"|project\s*\([^)]*\bCUDA\b"
    r"|\bcuda_add_(?:library|executable)\s*\("
    r"|LANGUAGES\s+[^)]*\bCUDA\b",
    re.I,
)
_SETUP_CUDA = re.compile(r"\bCUDAExtension\b")
_SKBUILD_CUDA = re.compile(r"CUDA")


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceCode:
    """Whether a source tree compiles CUDA device code, and what says so (or what was looked at)."""

    found: bool
    evidence: tuple[str, ...] = ()  # "chamferdist/knn.cu", "setup.py: CUDAExtension(...)"

    def describe(self) -> str:
        """One phrase: ``device code (chamferdist/knn.cu; setup.py: CUDAExtension)``."""
        if not self.found:
            return "no CUDA device code (no .cu/.cuh source, no CUDAExtension, no CUDA in CMake)"
        return f"CUDA device code ({'; '.join(self.evidence[:3])})"


def _device_sources(root: Path) -> list[str]:
    found: list[str] = []
    seen = 0
    for here, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d.lower() not in _SKIPPED_DIRS)
        for name in sorted(names):
            seen += 1
            if name.endswith(_DEVICE_SUFFIXES):
                found.append(str((Path(here) / name).relative_to(root)))
        if seen > _MAX_FILES or len(found) >= 3:
            break
    return found[:3]


def _first_line(pattern: re.Pattern[str], text: str) -> str | None:
    match = pattern.search(text)
    if match is None:
        return None
    start = text.rfind("\n", 0, match.start()) + 1
    end = text.find("\n", match.end())
    return text[start : end if end >= 0 else len(text)].strip()[:80]


def _skbuild_cuda(root: Path) -> str | None:
    text = read_text(root / "pyproject.toml", 1 << 18)
    start = text.find("[tool.scikit-build")
    if start < 0:
        return None
    table = text[start:]
    following = re.search(r"^\[(?!tool\.scikit-build)", table, re.M)
    table = table[: following.start()] if following else table
    return _first_line(_SKBUILD_CUDA, table)


def find_device_code(root: Path) -> DeviceCode:
    """Whether the source tree at ``root`` compiles CUDA device code, read from its files."""
    evidence = [*_device_sources(root)]
    setup = _first_line(_SETUP_CUDA, read_text(root / "setup.py"))
    if setup:
        evidence.append(f"setup.py: {setup}")
    cmake = _first_line(_CMAKE_CUDA, read_text(root / "CMakeLists.txt"))
    if cmake:
        evidence.append(f"CMakeLists.txt: {cmake}")
    skbuild = _skbuild_cuda(root)
    if skbuild:
        evidence.append(f"pyproject.toml [tool.scikit-build]: {skbuild}")
    return DeviceCode(found=bool(evidence), evidence=tuple(evidence))


def read_pkg_info(root: Path) -> tuple[str | None, str | None]:
    """(Name, Version) of the PKG-INFO at ``root`` (an unpacked sdist), or Nones."""
    text = read_text(root / "PKG-INFO", 1 << 16)
    if not text:
        return None, None
    headers = HeaderParser().parsestr(text.split("\n\n", 1)[0])
    return headers.get("Name"), headers.get("Version")


@dataclass(frozen=True, slots=True, kw_only=True)
class Sdist:
    """A released sdist, fetched and unpacked: the file pip builds, and what reading it told."""

    requirement: str  # "chamferdist==1.0.3"
    archive: Path  # the .tar.gz (or .zip) as published
    root: Path  # its unpacked top directory
    sha256: str
    device: DeviceCode
    script: BuildScript = field(default_factory=BuildScript)
    requires: tuple[str, ...] = ()  # its pyproject.toml's [build-system] requires

    @property
    def torch_extension(self) -> bool:
        """Whether it builds against torch: its setup.py uses torch's cpp_extension, or its
        build requirements name torch."""
        named = any(re.split(r"[\s=<>!~;\[@]", r.strip(), maxsplit=1)[0].lower() == "torch"
                    for r in self.requires)  # fmt: skip
        return self.script.torch_extension or named


def _build_requires(root: Path) -> tuple[str, ...]:
    try:
        document = _read.toml(read_text(root / "pyproject.toml", 1 << 18))
    except _read.Refused:
        return ()
    system = document.get("build-system")
    requires = system.get("requires") if isinstance(system, dict) else None
    if not isinstance(requires, list):
        return ()
    return tuple(r for r in requires if isinstance(r, str))


def read_sdist(requirement: str, archive: Path, root: Path, sha256: str) -> Sdist:
    """What the unpacked sdist at ``root`` says (its device code, its build script and its
    build requirements)."""
    return Sdist(
        requires=_build_requires(root),
        requirement=requirement,
        archive=archive,
        root=root,
        sha256=sha256,
        device=find_device_code(root),
        script=read_build_script(root),
    )
