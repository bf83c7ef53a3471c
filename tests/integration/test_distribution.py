"""cuship as a distribution: the sdist and wheel ``python -m build`` makes (the wheel from the
sdist) pass ``twine check --strict`` and ``check-wheel-contents``, carry every data file, one
version and an SPDX license; the wheel, installed into a bare venv (``python -m venv``, no
system site-packages) and run with ``python -I`` from a folder outside the checkout, imports
from the venv, says where it came from (PEP 610: an archive, a local file) and runs the main
job, ``cuship ship``, on a copy of the example.

The main job takes its CPU-only path (``CUSHIP_NVCC=none``: ship acts as if there were no nvcc
and the example's ``[build] cpu_fallback`` builds its ``+cpu`` wheel): the same pipeline (plan,
build, repair/label/verify, the quick check of the installed wheel in a scratch venv, the index)
without minutes of nvcc, which the example's own tests already hold.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "cuship"
EXAMPLE = REPO / "examples" / "cuvecops"

pytestmark = pytest.mark.network  # the bare venv's dependencies come from PyPI


def _one(dist: Path, pattern: str) -> Path:
    (found,) = dist.glob(pattern)
    return found


def _version() -> str:
    """The one source of cuship's version (pyproject reads it there, without importing)."""
    text = (SRC / "version.py").read_text(encoding="utf-8")
    found = re.search(r'^__version__ = "([^"]+)"$', text, re.MULTILINE)
    assert found is not None
    return found.group(1)


def _run(
    argv: list[str],
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, capture_output=True, text=True, check=False, cwd=cwd, env=env, timeout=timeout
    )


def test_twine_check_strict_and_check_wheel_contents_pass(cuship_dist: Path) -> None:
    sdist, wheel = _one(cuship_dist, "cuship-*.tar.gz"), _one(cuship_dist, "cuship-*.whl")
    twine = _run([sys.executable, "-m", "twine", "check", "--strict", str(sdist), str(wheel)])
    assert twine.returncode == 0, twine.stdout + twine.stderr
    assert twine.stdout.count("PASSED") == 2, twine.stdout
    contents = _run([sys.executable, "-m", "check_wheel_contents", str(wheel)])
    assert contents.returncode == 0, contents.stdout + contents.stderr
    assert f"{wheel}: OK" in contents.stdout


def test_the_wheel_holds_every_module_and_data_file_one_version_and_an_spdx_license(
    cuship_dist: Path,
) -> None:
    wheel = _one(cuship_dist, "cuship-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        version = _version()
        dist_info = f"cuship-{version}.dist-info"
        metadata = Parser().parsestr(archive.read(f"{dist_info}/METADATA").decode())
    shipped = {
        f"cuship/{p.relative_to(SRC).as_posix()}"
        for p in SRC.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert shipped - names == set()  # every module, data table, schema and template
    assert {n for n in names if not n.startswith(dist_info)} == shipped  # and nothing else
    assert metadata["Version"] == version == wheel.name.split("-")[1]
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata["License-File"] == "LICENSE"
    assert f"{dist_info}/licenses/LICENSE" in names
    assert metadata.get("License") is None  # the deprecated free-text field is gone
    assert "Classifier: License ::" not in str(metadata)


def test_the_sdist_holds_what_the_wheel_is_built_from(cuship_dist: Path) -> None:
    import tarfile

    sdist = _one(cuship_dist, "cuship-*.tar.gz")
    root = sdist.name.removesuffix(".tar.gz")
    with tarfile.open(sdist) as archive:
        names = set(archive.getnames())
        info = archive.extractfile(f"{root}/PKG-INFO")
        assert info is not None
        metadata = Parser().parsestr(info.read().decode())
    for name in ("LICENSE", "README.md", "pyproject.toml", "src/cuship/data/cuda.toml"):
        assert f"{root}/{name}" in names
    assert metadata["Version"] == _version()
    assert metadata["License-Expression"] == "Apache-2.0"


def _bare_env(tmp_path: Path) -> dict[str, str]:
    """This environment without the checkout on PYTHONPATH, a caller's venv or cuship's own
    variables; the venvs' scratch files under ``tmp_path``."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "CUSHIP_", "CI", "GITHUB_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    return env | {"TMPDIR": str(tmp_path)}


def test_the_installed_wheel_runs_the_main_job_from_a_bare_venv(
    cuship_dist: Path, tmp_path: Path
) -> None:
    wheel = _one(cuship_dist, "cuship-*.whl")
    venv = tmp_path / "venv"
    made = _run([sys.executable, "-m", "venv", str(venv)])  # no system site-packages
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    # [build]: the README's install (the example builds without isolation, from cuship[build])
    install = [str(python), "-m", "pip", "install", "-q", f"cuship[build] @ {wheel.as_uri()}"]
    done = _run(install, env=_bare_env(tmp_path), timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = _bare_env(tmp_path)
    where = _run(
        [str(python), "-I", "-c", "import cuship; print(cuship.__file__)"], cwd=elsewhere, env=env
    )
    assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout + where.stderr
    said = _run([str(python), "-I", "-m", "cuship", "--version"], cwd=elsewhere, env=env)
    assert said.returncode == 0, said.stderr
    assert f"cuship {_version()}" in said.stdout
    assert f"archive URL (direct_url.json archive_info): {wheel.as_uri()}" in said.stdout
    assert f"package: {venv.resolve()}" in said.stdout
    script = _run([str(venv / "bin" / "cuship"), "--version"], cwd=elsewhere, env=env)
    assert script.stdout == said.stdout  # the console script is the same cuship

    example = tmp_path / "cuvecops"
    ignore = shutil.ignore_patterns("build", "dist", ".cuship", "__pycache__", "*.egg-info")
    shutil.copytree(EXAMPLE, example, ignore=ignore)
    ship = [str(python), "-I", "-m", "cuship", "ship", str(example)]
    shipped = _run(ship, cwd=elsewhere, env=env | {"CUSHIP_NVCC": "none"}, timeout=1800)
    out = shipped.stdout + shipped.stderr
    assert shipped.returncode == 0, out
    assert "CPU-only path" in out
    wheels = sorted((example / "dist" / "cuship" / "wheels").glob("cuvecops-*+cpu-*.whl"))
    assert wheels, out
    assert (
        example / "dist" / "cuship" / "site" / "simple" / "cuvecops" / "index.html"
    ).is_file(), out
