"""compute-sanitizer's tools as ``cuship check --sanitize`` runs them: which tools there are, where
the executable is found, and the command line that starts a check worker under one of them.

The tool writes its report to ``--log-file`` (by default it writes to stdout, which is the
worker's protocol channel); ``--print-limit`` bounds what one worker process prints, and a worker
that reported anything is replaced before the next case, so the limit is per case in effect.
Each tool runs with its defaults (racecheck's ``analysis`` report: one ``Race reported between``
record per pair of accesses, the format the parser is tested on). The sanitized worker runs with
:data:`SANITIZED_ENV`: torch's caching allocator off, so that each tensor is an allocation of its
own and memcheck sees its bounds (an access past a tensor inside a cached block is otherwise
in bounds to the tool), and initcheck sees fresh memory rather than a reused block.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cuship import settings, tools
from cuship.errors import ToolMissing, UsageError

__all__ = [
    "PRINT_LIMIT",
    "SANITIZED_ENV",
    "SANITIZER",
    "TOOLS",
    "Tool",
    "find_sanitizer",
    "parse_tools",
    "sanitizer_command",
    "search_dirs",
]

SANITIZER = "compute-sanitizer"
# Errors a sanitized worker prints before the tool only counts them: room for the failed driver
# entry-point lookups a library makes as it starts (numba-cuda's cuda-python made 34 on the H100,
# each an "error" that counts against the limit) and, after them, a case's own findings.
PRINT_LIMIT = 200
SANITIZED_ENV: Mapping[str, str] = {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    """One compute-sanitizer tool: what it catches, and options cuship adds to its defaults."""

    name: str
    catches: str
    options: tuple[str, ...] = ()


TOOLS: Mapping[str, Tool] = {
    t.name: t
    for t in (
        Tool(
            name="memcheck",
            catches="out-of-bounds and misaligned accesses, hardware exceptions, failed API calls",
        ),
        Tool(name="racecheck", catches="shared-memory data races (hazards between threads)"),
        Tool(name="initcheck", catches="reads of device global memory that was never written"),
        Tool(name="synccheck", catches="invalid uses of barriers and other synchronisation"),
    )
}


def parse_tools(text: str) -> tuple[str, ...]:
    """``"memcheck,racecheck"`` (or ``"all"``) -> the tools, in order, once each; UsageError
    (exit 2) on an unknown name or an empty list."""
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    choices = f"{', '.join(TOOLS)}, or all"
    if not names:
        raise UsageError(f"--sanitize {text!r} names no tool", hint=f"tools: {choices}")
    chosen: list[str] = []
    for name in names:
        if name == "all":
            chosen.extend(TOOLS)
        elif name in TOOLS:
            chosen.append(name)
        else:
            raise UsageError(f"--sanitize: no tool named {name!r}", hint=f"tools: {choices}")
    return tuple(dict.fromkeys(chosen))


def search_dirs(environ: Mapping[str, str]) -> tuple[str, ...]:
    """Where compute-sanitizer is looked for, each directory in order: the places of
    :func:`cuship.tools.search_places` ($CUDA_HOME/bin, $CUDA_PATH/bin, PATH,
    /usr/local/cuda/bin), PATH split into its entries."""
    return tools.search_dirs(SANITIZER, environ)


_FIX = (
    "install the CUDA toolkit (compute-sanitizer ships with it) and put its bin/ on PATH or set "
    f"CUDA_HOME, or name the executable in {settings.COMPUTE_SANITIZER}; "
    "or run without --sanitize (cuship gpu-run: --skip-sanitize)"
)


def find_sanitizer(environ: Mapping[str, str]) -> str:
    """The compute-sanitizer executable; ToolMissing (exit 3) saying where it looked and the fix.

    ``CUSHIP_COMPUTE_SANITIZER`` names it (``none``: act as if there were none)."""
    found = tools.find_tool(SANITIZER, environ)
    if found.setting is not None:
        override = environ[found.setting]
        if found.path is None:
            raise ToolMissing(
                f"--sanitize needs {SANITIZER}, and {found.setting}={override!r} "
                "says there is none",
                hint=_FIX,
            )
        if not (Path(found.path).is_file() and os.access(found.path, os.X_OK)):
            raise ToolMissing(f"{found.setting}={override!r} is not an executable file", hint=_FIX)
        return found.path
    if found.path is not None:
        return found.path
    looked = search_dirs(environ)
    shown = ", ".join(looked) if len(looked) <= 8 else ", ".join((*looked[:7], "..."))
    raise ToolMissing(
        f"--sanitize needs {SANITIZER}, which is not in $CUDA_HOME/bin, on PATH or in "
        f"{tools.DEFAULT_TOOLKIT_BIN} (looked in {shown})",
        hint=_FIX,
    )


def sanitizer_command(
    sanitizer: str, tool: str, log: Path, *, print_limit: int = PRINT_LIMIT
) -> tuple[str, ...]:
    """The prefix that runs a program under ``tool``, its report going to ``log``."""
    return (
        sanitizer,
        "--tool",
        tool,
        "--print-limit",
        str(print_limit),
        "--log-file",
        str(log),
        *TOOLS[tool].options,
    )
