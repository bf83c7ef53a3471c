"""A check worker runs in the user's environment: ``PYTHONPATH`` and the working directory as
given, the package imported from where the user's Python imports it (and the report says where);
a package under check that fails to import is the first thing said; a missing NumPy or torch is
exit 3 with the install line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.integration import clirun
from tests.integration.venvs import make_venv

pytestmark = pytest.mark.integration

_CHECKS = """
    from cuship.check import Impl, Op, Tensor

    def ref(x):
        return 2 * x

    def double(x):
        from libx import double

        return double(x)

    OP = Op(
        name="double",
        reference=ref,
        inputs=(Tensor(name="x", dims=("n",)),),
        shapes=({"n": 8},),
        impls=(Impl(kind="native", fn=double),),
    )
"""


def _project(root: Path, packages: str) -> Path:
    root.mkdir(parents=True)
    (root / "cuship.toml").write_text(
        f'[check]\nmodules = ["checks.py"]\npythonpath = ["."]\npackages = ["{packages}"]\n'
    )
    (root / "checks.py").write_text(textwrap.dedent(_CHECKS))
    return root


def _library(where: Path, body: str) -> None:
    (where / "libx").mkdir(parents=True)
    (where / "libx" / "__init__.py").write_text(f"def double(x):\n    return {body}\n")


_JSON = ("--device", "cpu", "--no-store", "--format", "json")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS", "PYTHONPATH")}
    return {**env, **extra}


def test_a_relative_pythonpath_reaches_the_workers_ahead_of_cuship_s_site(tmp_path: Path) -> None:
    # cuship lives in a site directory that also holds the right library, as an installed
    # cuship shares site-packages with the library under check; the user points PYTHONPATH, a
    # path relative to their working directory, at a copy with a planted bug.
    site = tmp_path / "site"
    shutil.copytree(
        clirun.SRC / "cuship", site / "cuship", ignore=shutil.ignore_patterns("__pycache__")
    )
    _library(site, "2 * x")
    _library(tmp_path / "bugs" / "planted", "2 * x + 1")
    project = _project(tmp_path / "proj", "libx")
    boot = f"import sys; sys.path.insert(0, {str(site)!r}); from cuship.cli import main; sys.exit(main())"
    done = subprocess.run(
        [sys.executable, "-c", boot, "check", str(project), *_JSON],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_env(PYTHONPATH="bugs/planted"),
        timeout=300,
    )
    report = json.loads(done.stdout)
    assert done.returncode == 1, done.stderr
    (package,) = report["provenance"]["packages"]
    assert package["file"] == str(tmp_path / "bugs" / "planted" / "libx" / "__init__.py")
    assert report["groups"][0]["status"] == "failed"


def test_a_package_that_fails_to_import_is_said_first_with_where(tmp_path: Path) -> None:
    project = _project(tmp_path / "proj", "libx")
    (project / "libx").mkdir()
    init = project / "libx" / "__init__.py"
    init.write_text('raise RuntimeError("No device were detected on your machine !")\n')
    done = clirun.cuship("check", str(project), "--device", "cpu", "--no-store", cwd=tmp_path)
    first = done.stdout.splitlines()[0]
    assert first == (
        f"package libx failed to import from {project / 'libx'}: RuntimeError: No device were "
        f"detected on your machine ! (at {init}:1 in <module>)"
    ), done.stdout


@pytest.mark.network
def test_without_numpy_or_torch_check_is_exit_3_with_the_install_line(tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    uv = [sys.executable, "-m", "uv", "pip", "install", "-q", "--python", str(python)]
    subprocess.run(
        [*uv, "packaging", "click", "rich", "PyYAML", "jinja2"], check=True, capture_output=True
    )
    project = _project(tmp_path / "proj", "libx")
    run = [str(python), "-m", "cuship", "check", str(project), "--device", "cpu", "--no-store"]
    env = _env(PYTHONPATH=str(clirun.SRC))
    done = subprocess.run(run, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 3, done.stderr
    assert "cuship check needs NumPy" in done.stderr
    assert "pip install 'cuship[check]'" in done.stderr
    subprocess.run([*uv, "numpy"], check=True, capture_output=True)
    (project / "checks.py").write_text("import torch\n" + (project / "checks.py").read_text())
    done = subprocess.run(run, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 3, done.stderr
    assert "a check module imports torch, which is not installed here" in done.stderr
    assert "download.pytorch.org/whl/cpu" in done.stderr
