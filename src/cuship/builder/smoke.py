"""Import a built wheel in a fresh virtual environment, as a user's machine would."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from cuship.builder.commands import run_step
from cuship.builder.model import Step

__all__ = ["smoke_test"]

_MARK = "cuship-smoke:"  # the import's own line, told apart from warnings on stderr


def smoke_test(
    wheel: Path, module: str, *, log: Path, environ: Mapping[str, str], python: str = sys.executable
) -> str:
    """Install ``wheel`` (with its dependencies) into a new venv and import ``module``.

    Returns what the import printed (the module's ``backend()`` when it has one); raises
    BuildFailed (exit 1) with pip's or Python's own message when either fails.
    """
    code = (
        f"import {module} as m; print({_MARK!r}, m.__name__, getattr(m, '__version__', ''),"
        " m.backend() if hasattr(m, 'backend') else '')"
    )
    with tempfile.TemporaryDirectory(prefix="cuship-smoke-") as tmp:
        venv_python = str(Path(tmp) / "venv" / "bin" / "python")
        steps = (
            Step(
                name="smoke-venv",
                description="fresh venv",
                argv=(python, "-m", "venv", f"{tmp}/venv"),
                cwd=tmp,
            ),
            Step(
                name="smoke-install",
                description=f"install {wheel.name}",
                argv=(venv_python, "-m", "pip", "install", "-q", str(wheel)),
                cwd=tmp,
            ),
            Step(
                name="smoke-import",
                description=f"import {module}",
                argv=(venv_python, "-c", code),
                cwd=tmp,
            ),
        )
        output = ""
        for step in steps:
            output = run_step(step, log, environ)
        said = [line for line in output.splitlines() if line.startswith(_MARK)]
        return said[-1].removeprefix(_MARK).strip() if said else output.strip()
