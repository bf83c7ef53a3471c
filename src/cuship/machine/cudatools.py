"""Finding the CUDA toolkit's own tools (ncu, compute-sanitizer, cuobjdump): where they are, and
where cuship looked when they are not there.

The places, in order: ``PATH``, ``$CUDA_HOME/bin``, ``$CUDA_PATH/bin``, ``/usr/local/cuda/bin``
(the toolkit's installers put ``ncu`` and ``compute-sanitizer`` there, but not on ``PATH``).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FoundTool", "find_cuda_tool", "tool_dirs"]

DEFAULT_TOOLKIT_BIN = "/usr/local/cuda/bin"


@dataclass(frozen=True, slots=True, kw_only=True)
class FoundTool:
    """Where ``name`` is (None: nowhere) and the places searched, described for a message."""

    name: str
    path: str | None
    searched: tuple[str, ...]

    def where(self) -> str:
        """``"PATH, $CUDA_HOME/bin (/opt/cuda/bin) or /usr/local/cuda/bin"``."""
        *first, last = self.searched
        return f"{', '.join(first)} or {last}" if first else last


def tool_dirs(environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """(description, search path) pairs in the order searched."""
    places = [("PATH", environ.get("PATH", ""))]
    for var in ("CUDA_HOME", "CUDA_PATH"):
        home = environ.get(var)
        if home:
            bin_dir = str(Path(home) / "bin")
            places.append((f"${var}/bin ({bin_dir})", bin_dir))
    places.append((DEFAULT_TOOLKIT_BIN, DEFAULT_TOOLKIT_BIN))
    return tuple(places)


def find_cuda_tool(name: str, environ: Mapping[str, str]) -> FoundTool:
    """The first ``name`` executable in :func:`tool_dirs`; ``path`` None when there is none."""
    places = tool_dirs(environ)
    for _, search in places:
        found = shutil.which(name, path=search) if search else None
        if found is not None:
            return FoundTool(name=name, path=found, searched=tuple(p for p, _ in places))
    return FoundTool(name=name, path=None, searched=tuple(p for p, _ in places))
