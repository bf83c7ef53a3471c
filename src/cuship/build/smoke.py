"""Import a built wheel in a fresh virtual environment, as a user's machine would."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from cuship.errors import CheckFailed

__all__ = ["smoke_test"]


def smoke_test(
    wheel: Path, module: str, *, log: Path, environ: Mapping[str, str], python: str = sys.executable
) -> str:
    """Install ``wheel`` (with its dependencies) into a new venv and import ``module``.

    Returns what the import printed (the module's ``backend()`` when it has one); raises
    CheckFailed with pip's or Python's message when either fails.
    """
    code = (
        f"import {module} as m; print(m.__name__, getattr(m, '__version__', ''),"
        " m.backend() if hasattr(m, 'backend') else '')"
    )
    with tempfile.TemporaryDirectory(prefix="cuship-smoke-") as tmp:
        venv = Path(tmp) / "venv"
        steps = [
            [python, "-m", "venv", str(venv)],
            [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
            [str(venv / "bin" / "python"), "-c", code],
        ]
        output = ""
        for argv in steps:
            done = subprocess.run(
                argv, capture_output=True, text=True, env=dict(environ), cwd=tmp, check=False
            )
            output = done.stdout + done.stderr
            with log.open("a", encoding="utf-8") as fh:
                fh.write(f"$ {' '.join(argv)}\n{output}\n")
            if done.returncode != 0:
                raise CheckFailed(
                    f"smoke test of {wheel.name!r} failed at {argv[-1]!r}:\n{output.strip()[-2000:]}",
                    hint=f"full log: {log}",
                )
        return output.strip()
