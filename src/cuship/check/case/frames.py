"""An error raised by a kernel, told by the kernel's own file and line, not the engine's.

The Triton interpreter wraps a kernel's exception in an InterpreterError raised from its own
frames, and the last frames of a traceback are Triton's, torch's or NumPy's. :func:`describe`
walks the exception and its causes and names the innermost frame outside those packages (and
outside cuship): the line of the user's kernel or entry point that failed.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["describe", "user_frame"]

# Packages whose frames are the engine's, never the user's.
_ENGINE_PACKAGES = ("triton", "torch", "numpy", "numba", "numba_cuda", "cuship")


def _engine_dirs() -> tuple[str, ...]:
    dirs = []
    for name in _ENGINE_PACKAGES:
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if path:
            dirs.append(str(Path(path).resolve().parent))
    return tuple(dirs)


def _chain(err: BaseException) -> Iterator[BaseException]:
    """The exception and its causes, outermost first, each once, as Python shows them: a
    ``raise ... from None`` ends the chain there (its message is the one meant for people)."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        if current.__cause__ is not None:
            current = current.__cause__
        elif current.__suppress_context__:
            current = None
        else:
            current = current.__context__


def user_frame(
    err: BaseException, engine_dirs: Sequence[str] | None = None
) -> traceback.FrameSummary | None:
    """The innermost frame, over the exception chain, whose file is not in an engine package."""
    dirs = _engine_dirs() if engine_dirs is None else tuple(engine_dirs)
    found = None
    for link in _chain(err):
        for frame in traceback.extract_tb(link.__traceback__):
            filename = str(Path(frame.filename).resolve()) if frame.filename else ""
            if not filename.startswith(dirs) and not frame.filename.startswith("<"):
                found = frame
    return found


def _root(err: BaseException) -> BaseException:
    return list(_chain(err))[-1]


def describe(err: BaseException, engine_dirs: Sequence[str] | None = None) -> str:
    """The failure in a few lines: the root exception, the user's line, the last engine frame."""
    root = _root(err)
    lines = [f"{type(root).__name__}: {root}"]
    if root is not err:
        lines[0] += f" (raised as {type(err).__name__})"
    frame = user_frame(err, engine_dirs)
    if frame is not None:
        where = f"  at {frame.filename}:{frame.lineno} in {frame.name}"
        lines.append(where + (f": {frame.line.strip()}" if frame.line else ""))
    tail = traceback.extract_tb(root.__traceback__)[-1:] if root.__traceback__ else []
    for last in tail:
        if frame is None or (last.filename, last.lineno) != (frame.filename, frame.lineno):
            lines.append(f"  innermost: {last.filename}:{last.lineno} in {last.name}")
    return "\n".join(lines)
