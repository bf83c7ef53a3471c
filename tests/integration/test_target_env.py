"""The environment pip installs into, seen from a build hook: a venv over the interpreter cuship
runs in keeps that interpreter's site-packages among its own (its torch is the user's), though
that directory also lends the probe its ``packaging``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

from tests.integration.indexsite import REPO


def test_a_system_site_venv_keeps_the_base_site_packages_with_its_torch(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", str(tmp_path / "v")], check=True
    )
    python = tmp_path / "v" / "bin" / "python"
    code = (
        "import json, os\n"
        "from cuship.resolve.target import find_target\n"
        "found = find_target(os.environ)\n"
        "print(json.dumps([found.python, list(found.site_dirs)]))"
    )
    env = {
        **os.environ,
        "PIP_BUILD_TRACKER": str(tmp_path / "tracker"),
        "PYTHONPATH": str(REPO / "src"),
    }
    done = subprocess.run(
        [str(python), "-c", code], env=env, capture_output=True, text=True, check=True
    )
    seen, sites = json.loads(done.stdout)
    assert seen == str(python)
    base = sysconfig.get_paths()["purelib"]  # where this interpreter keeps torch and packaging
    assert base in sites and str(tmp_path / "v" / "lib") in " ".join(sites)
