"""The environment pip installs into, seen from a build hook: a site directory on the target's
own path stays among its site directories though it also lends the probe its ``packaging`` (a
venv over the interpreter cuship runs in has the user's torch there)."""

from __future__ import annotations

import json
import os
import subprocess
import sysconfig
from pathlib import Path

import packaging

from tests.integration.indexsite import REPO
from tests.integration.venvs import make_venv


def test_a_site_directory_that_also_lends_packaging_stays_the_targets(tmp_path: Path) -> None:
    python = make_venv(tmp_path / "v")
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # the target's own path holds the directory this interpreter takes packaging from
    lent = str(Path(next(iter(packaging.__path__))).parent)
    Path(purelib, "_shared.pth").write_text(lent + "\n")
    code = (
        "import json, os\n"
        "from cuship.resolve.target import find_target\n"
        "found = find_target(os.environ)\n"
        "print(json.dumps([found.executable, list(found.paths)]))"
    )
    env = {**os.environ, "PIP_BUILD_TRACKER": str(tmp_path / "tracker")}
    env["PYTHONPATH"] = str(REPO / "src")
    done = subprocess.run(
        [str(python), "-c", code], env=env, capture_output=True, text=True, check=True
    )
    seen, sites = json.loads(done.stdout)
    assert seen == str(python)
    assert lent in sites and purelib in sites
    assert sysconfig.get_paths()["purelib"] != purelib  # a venv of its own, not this one
