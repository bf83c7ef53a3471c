"""What a project's own build script does that cuship must steer, read from its text (bounded,
never run): the ``*_FORCE_BUILD`` switches that skip a prebuilt download (flash-attention,
causal-conv1d, mamba), the GPU architecture flags it hard-codes, and, for a setup.py project
with no ``[project]`` table, its name and version where they are written plainly."""

from __future__ import annotations

import re
from pathlib import Path

from packaging.utils import InvalidName, canonicalize_name
from packaging.version import InvalidVersion, Version

from cuship._record import frozen

__all__ = ["FORCE_SWITCH", "BuildScript", "read_build_script", "read_text"]

FORCE_SWITCH = re.compile(r"""["']([A-Z][A-Z0-9_]*_FORCE_BUILD)["']""")
_ARCH_FLAG = re.compile(
    r"""["'](?:-gencode|--generate-code|-arch|--gpu-architecture)\b"""  # a flag in a string
    r"""|["'][^"'\n]*arch=compute_\d"""  # "arch=compute_90,code=sm_90"
    r"""|CMAKE_CUDA_ARCHITECTURES\s+["']?\d"""  # set(CMAKE_CUDA_ARCHITECTURES 80 90)
)
_PACKAGE_NAME = re.compile(r"""^PACKAGE_NAME\s*=\s*["']([A-Za-z0-9][A-Za-z0-9._-]*)["']""", re.M)
_SETUP_NAME = re.compile(r"""\bname\s*=\s*["']([A-Za-z0-9][A-Za-z0-9._-]*)["']""")
_VERSION = re.compile(r"""^__version__\s*=\s*["']([^"'\n]{1,64})["']""", re.M)
_LIMIT = 1 << 20


def read_text(path: Path, limit: int = _LIMIT) -> str:
    """The first ``limit`` bytes of ``path`` as text; empty when it cannot be read."""
    try:
        with path.open("rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""


@frozen
class BuildScript:
    """What setup.py (or CMakeLists.txt) says, as far as reading it tells."""

    file: str | None = None  # "setup.py"
    force_switches: tuple[str, ...] = ()
    arch_flags: tuple[str, ...] = ()  # the lines that hard-code arch flags (first few)
    name: str | None = None
    version: str | None = None


def _arch_lines(text: str) -> tuple[str, ...]:
    lines = [
        line.strip()
        for line in text.splitlines()
        if _ARCH_FLAG.search(line) and not line.strip().startswith("#")
    ]
    return tuple(line[:120] for line in lines[:3])


def _version_near(root: Path, name: str | None) -> str | None:
    """``__version__`` of the package ``name`` (``causal_conv1d/__init__.py``), if plain."""
    if name is None:
        return None
    module = name.replace("-", "_").replace(".", "_")
    for init in (root / module / "__init__.py", root / "src" / module / "__init__.py"):
        match = _VERSION.search(read_text(init, 1 << 16))
        if match:
            try:
                return str(Version(match[1]))
            except InvalidVersion:
                return None
    return None


def _plain_name(text: str) -> str | None:
    """``PACKAGE_NAME = "x"`` at the top level, else the first ``name="x"`` in ``setup(...)``."""
    found = _PACKAGE_NAME.search(text)
    if found:
        return found[1]
    call = text.find("setup(")
    found = _SETUP_NAME.search(text, call) if call >= 0 else None
    return found[1] if found else None


def read_build_script(root: Path) -> BuildScript:
    """Read ``root``'s setup.py, else its CMakeLists.txt."""
    for file in ("setup.py", "CMakeLists.txt"):
        text = read_text(root / file)
        if not text:
            continue
        plain = _plain_name(text) if file == "setup.py" else None
        name = None
        if plain:
            try:
                name = canonicalize_name(plain, validate=True)
            except InvalidName:
                plain = None
        return BuildScript(
            file=file,
            force_switches=tuple(sorted(set(FORCE_SWITCH.findall(text)))),
            arch_flags=_arch_lines(text),
            name=name,
            version=_version_near(root, plain),
        )
    return BuildScript()
