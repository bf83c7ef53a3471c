"""The one way integration tests make a virtual environment: ``uv venv`` over this interpreter.

``system_site``: the venv sees what this interpreter sees, venv or not (the README's test
command run in a user's venv, where torch was installed): its site directories layered by a
``.pth`` file, as cuship's own venvs over an interpreter are (:mod:`cuship.machine.sites`).
``--system-site-packages`` would not do: a venv made from a venv is a venv of the base Python,
and sees the base Python's packages, not the venv's.

``python -m venv`` runs ensurepip, which installs pip by running it: seconds a venv, more on a
busy machine. uv makes the venv in a fraction of that; where a test needs pip inside (it tests
what pip does), the pip wheel this Python bundles for ensurepip is installed from the file, with
no index: the same pip ``python -m venv`` would have put there, offline.
"""

from __future__ import annotations

import ensurepip
import os
import subprocess
import sys
import sysconfig
from collections.abc import Mapping
from pathlib import Path

from cuship.machine import sites

__all__ = ["LAYER_PTH", "make_venv"]

LAYER_PTH = "_tests_layer.pth"

_UV = (sys.executable, "-m", "uv")


def _bundled_pip() -> Path:
    """The pip wheel ensurepip installs: in its ``_bundled`` folder, or where a distribution
    keeps it instead (``WHEEL_PKG_DIR``: Debian's /usr/share/python-wheels, whose Python
    bundles none)."""
    folders = [Path(ensurepip.__file__).parent / "_bundled"]
    elsewhere = sysconfig.get_config_var("WHEEL_PKG_DIR")
    if elsewhere:
        folders.append(Path(elsewhere))
    found = sorted(wheel for folder in folders for wheel in folder.glob("pip-*.whl"))
    assert found, f"no pip wheel for ensurepip in {[str(f) for f in folders]}"
    return found[-1]


def make_venv(
    where: Path,
    *,
    pip: bool = False,
    system_site: bool = False,
    env: Mapping[str, str] | None = None,
) -> Path:
    """A venv at ``where`` for this interpreter; its ``bin/python``. ``pip``: with pip installed;
    ``system_site``: it sees this interpreter's packages (its site directories)."""
    child = {**(os.environ if env is None else env), "UV_NO_CONFIG": "1"}
    args = [*_UV, "venv", "-q", "--python", sys.executable, str(where)]
    subprocess.run(args, check=True, capture_output=True, env=child, timeout=300)
    if system_site:
        purelib = Path(sites.venv_purelib(str(where)))
        (purelib / LAYER_PTH).write_text(sites.layer_text(sites.site_dirs()), encoding="utf-8")
    python = where / "bin" / "python"
    if pip:
        seed = [*_UV, "pip", "install", "-q", "--python", str(python), "--no-index", "--no-deps"]
        subprocess.run(
            [*seed, str(_bundled_pip())], check=True, capture_output=True, env=child, timeout=300
        )
    return python
