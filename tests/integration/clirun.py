"""The one way integration tests run the cuship command line: ``python -m cuship`` in a child.

The child imports cuship from this checkout (``PYTHONPATH`` = ``src``), whatever is installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Collection, Mapping
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def cuship(
    *args: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    base: Mapping[str, str] | None = None,
    drop: Collection[str] = (),
    columns: int | None = None,
    cwd: Path | None = None,
    timeout: float | None = 300,
    input: str | None = None,
    check: bool = False,
    umask: int = -1,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m cuship ARGS`` and return what happened, output captured as text.

    The child's environment is ``base`` (default: this process's) without the names in
    ``drop``, with this checkout's ``src`` as ``PYTHONPATH`` and ``COLUMNS`` when ``columns`` is
    given, then ``env`` on top. Raises on a non-zero exit only with ``check``. ``umask``: the
    child's (-1: inherited).
    """
    child = {k: v for k, v in (os.environ if base is None else base).items() if k not in drop}
    child["PYTHONPATH"] = str(SRC)
    if columns is not None:
        child["COLUMNS"] = str(columns)
    if "CUSHIP_GPUS" in (env or {}) and "CUDA_VISIBLE_DEVICES" not in (env or {}):
        # A faked machine has none of this one's device UUIDs: on a GPU box, the share cuship's
        # pytest plugin gave this xdist worker (CUDA_VISIBLE_DEVICES=GPU-...) would hide the fake.
        child.pop("CUDA_VISIBLE_DEVICES", None)
    child.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "cuship", *(os.fspath(arg) for arg in args)],
        capture_output=True,
        text=True,
        env=child,
        cwd=cwd,
        timeout=timeout,
        input=input,
        check=check,
        umask=umask,
    )
