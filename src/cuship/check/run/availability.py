"""Whether an engine can run here: its modules import in a worker started with the device's flags.

An engine that cannot import (torch missing for the Triton interpreter, numba-cuda broken by a
newer NumPy) is reported once, with the error's last line and what to install, and its groups
are skipped with that reason, instead of one identical error per case.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cuship.provenance import one_line

if TYPE_CHECKING:
    from cuship.errors import ToolMissing

__all__ = [
    "Unavailable",
    "import_problem",
    "missing_module",
    "require_numpy",
    "unavailable",
    "unavailable_after_death",
]

_TORCH_CPU = (
    "pip install torch --index-url https://download.pytorch.org/whl/cpu (the CPU build is "
    "enough for the Triton interpreter; torch is not in cuship[check] because of its size)"
)

# What to install when an engine's top-level module is missing, and when it is there but raises
# on import. Keys are top-level module names.
_MISSING_FIX: Mapping[str, str] = {
    "numpy": "pip install 'cuship[check]' (it brings numpy)",
    "torch": _TORCH_CPU,
    "triton": "pip install 'cuship[check]' (it brings triton)",
    "numba": "pip install 'cuship[check]' (it brings numba and numba-cuda)",
    "numba_cuda": "pip install 'cuship[check]' (it brings numba and numba-cuda)",
}
_BROKEN_FIX: Mapping[str, str] = {
    "torch": "reinstall torch for this Python: " + _TORCH_CPU,
    "triton": "install a triton release that imports with this torch and Python "
    "(pip install -U triton)",
    "numba": "install numba and numba-cuda releases that support the installed NumPy "
    "(pip install -U numba numba-cuda), or pin numpy to a version they support",
    "numba_cuda": "install numba and numba-cuda releases that support the installed NumPy "
    "(pip install -U numba numba-cuda), or pin numpy to a version they support",
}


def require_numpy() -> None:
    """``cuship check`` plans each case's values with NumPy: without it, exit 3 with the install
    line (never a traceback from the first import of it)."""
    import importlib.util
    import sys

    from cuship.errors import ToolMissing

    if importlib.util.find_spec("numpy") is None:
        raise ToolMissing(
            f"cuship check needs NumPy, and {sys.executable} has none",
            hint=f"{sys.executable} -m pip install 'cuship[check]' (numpy, triton, numba), and "
            "for the Triton interpreter torch's CPU build: " + _TORCH_CPU,
        )


def missing_module(err: BaseException, what: str) -> ToolMissing | None:
    """``what`` (a check module) failed to import because NumPy, torch, Triton or Numba is not
    installed: that as a missing tool (exit 3) with the install line; None for any other error."""
    from cuship.errors import ToolMissing

    cause: BaseException | None = err
    while cause is not None and not isinstance(cause, ModuleNotFoundError):
        cause = cause.__cause__ or cause.__context__
    top = str(cause.name or "").partition(".")[0] if cause is not None else ""
    if cause is None or top not in _MISSING_FIX:
        return None
    return ToolMissing(
        f"{what} imports {top}, which is not installed here ({one_line(cause)})",
        hint=_MISSING_FIX[top],
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Unavailable:
    """An engine whose modules do not import here: the error, on one line, and the fix."""

    engine: str
    error: str
    fix: str

    @property
    def reason(self) -> str:
        """The skip reason of each of the engine's groups."""
        return f"engine {self.engine} unavailable: {self.error}"

    def line(self) -> str:
        return f"{self.reason}; fix: {self.fix}"

    def to_json(self) -> dict[str, str]:
        return {"engine": self.engine, "error": self.error, "fix": self.fix}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Unavailable:
        return cls(engine=str(raw["engine"]), error=str(raw["error"]), fix=str(raw["fix"]))


def import_problem(names: Sequence[str]) -> dict[str, Any] | None:
    """Import ``names`` in order (worker side); the first failure as JSON, or None."""
    import importlib

    for name in names:
        try:
            importlib.import_module(name)
        except Exception as err:  # any exception on import makes the engine unusable
            missing = err.name if isinstance(err, ModuleNotFoundError) else None
            return {"module": name, "missing": missing, "error": one_line(err)}
    return None


def unavailable(engine: str, problem: Mapping[str, Any]) -> Unavailable:
    """What to tell the user about ``problem`` (from :func:`import_problem`) for ``engine``."""
    module = str(problem["module"])
    missing = problem.get("missing")
    if problem.get("stage") == "launch":
        error = f"its first kernel failed ({module}): {problem['error']}"
    else:
        error = f"importing {module} failed: {problem['error']}"
    if missing:
        top = str(missing).partition(".")[0]
        return Unavailable(
            engine=engine, error=error, fix=_MISSING_FIX.get(top, f"pip install {top}")
        )
    top = module.partition(".")[0]
    fix = _BROKEN_FIX.get(top, f"reinstall {top} (pip install --force-reinstall {top})")
    return Unavailable(engine=engine, error=error, fix=fix)


def unavailable_after_death(engine: str, modules: Sequence[str], message: str) -> Unavailable:
    """The worker died or hung importing ``modules`` for ``engine`` (``message``: WorkerDied's)."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    error = lines[0] if lines else "the worker died"
    if len(lines) > 1 and lines[-1] != error:
        error += f" ({lines[-1]})"
    command = f"python -c 'import {', '.join(modules)}'"
    return Unavailable(
        engine=engine,
        error=error,
        fix=f"run {command} in the same environment to see which import fails, "
        "and reinstall that package",
    )
