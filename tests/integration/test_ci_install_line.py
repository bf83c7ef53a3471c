"""``ci init``'s install line installs that same cuship in a fresh venv.

A cuship is installed the way a maintainer would have it (from a git URL: a local bare clone,
``git+file://…@COMMIT``; from a wheel folder, by name through ``--find-links``); that cuship
runs ``ci init`` with no ``--cuship``, so the pin is its own reading of its PEP 610 record. The
pin is read back from the generated ``.gitlab-ci.yml`` (its ``PINNED_CUSHIP`` variable)
and installed by the generated job's own install lines, run as the job runs them, into the
fresh venv they make; ``cuship --version`` there must name the commit, or the wheel's files
must be the ones installed.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.ci_engine import PYTHON, narrow_to_python
from tests.integration.venvs import make_venv

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "cuvecops"
_UV = [sys.executable, "-m", "uv"]

pytestmark = pytest.mark.network  # cuship[all]'s dependencies come from PyPI


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "CUSHIP_", "UV_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    return env | {"TMPDIR": str(tmp_path)} | extra


def _run(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=1200)
    assert done.returncode == 0, f"{argv}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _generated(cuship: Path, tmp_path: Path, env: dict[str, str]) -> dict[str, Any]:
    """The .gitlab-ci.yml that ``cuship`` (an installed console script) writes for a copy of the
    example whose CI Python is this one (a runner here has no other)."""
    example = tmp_path / "example"
    ignore = shutil.ignore_patterns("build", "dist", ".cuship", "__pycache__", "*.egg-info")
    shutil.copytree(EXAMPLE, example, ignore=ignore)
    narrow_to_python(example)
    text = _run([str(cuship), "ci", "init", str(example), "--provider", "gitlab", "--print"], env)
    doc: dict[str, Any] = yaml.safe_load(text)
    assert doc["index"]["variables"]["PYTHON"]["value"] == PYTHON
    return doc


def _install_with_the_job_lines(doc: dict[str, Any], env: dict[str, str]) -> Path:
    """Run the index job's own install lines (up to the venv going on PATH) with the pipeline's
    variables, as GitLab would; the fresh venv they made."""
    lines: list[str] = doc["index"]["before_script"]
    last = next(i for i, line in enumerate(lines) if line.startswith("export PATH="))
    script = "\n".join([*lines[: last + 1], 'echo "made: $JOB_VENV"'])
    variables = {k: v["value"] for k, v in doc["variables"].items()}
    variables["PYTHON"] = doc["index"]["variables"]["PYTHON"]["value"]
    out = _run(["bash", "-e", "-c", script], env | variables)
    return Path(out.strip().splitlines()[-1].removeprefix("made: "))


def _requirement(doc: dict[str, Any]) -> str:
    value: str = doc["variables"]["PINNED_CUSHIP"]["value"]
    assert "\n" not in value
    return value


def test_a_cuship_from_a_git_url_pins_that_commit_and_the_line_installs_it(
    tmp_path: Path,
) -> None:
    bare = tmp_path / "cuship.git"
    env = _env(tmp_path)
    _run(["git", "clone", "-q", "--bare", str(REPO), str(bare)], env)
    commit = _run(["git", "-C", str(bare), "rev-parse", "HEAD"], env).strip()
    url = f"git+{bare.as_uri()}@{commit}"
    maintainer = make_venv(tmp_path / "maintainer", env=env)
    _run([*_UV, "pip", "install", "-q", "--python", str(maintainer), f"cuship @ {url}"], env)
    doc = _generated(maintainer.parent / "cuship", tmp_path, env)
    assert _requirement(doc) == f"cuship[all] @ {url}"

    venv = _install_with_the_job_lines(doc, env)
    said = _run([str(venv / "bin" / "cuship"), "--version"], env, cwd=tmp_path)
    assert f"a VCS checkout (direct_url.json vcs_info): git+{bare.as_uri()} at {commit}" in said
    assert f"package: {venv.resolve()}" in said


def _record(wheel: Path) -> dict[str, str]:
    """The wheel's RECORD: path -> sha256 (urlsafe base64, as RECORD writes it)."""
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/RECORD")]
        rows = csv.reader(io.StringIO(archive.read(name).decode()))
        return {row[0]: row[1] for row in rows if row[1]}


def test_a_cuship_from_a_wheel_folder_pins_its_version_and_the_line_installs_that_wheel(
    tmp_path: Path, cuship_dist: Path
) -> None:
    (wheel,) = cuship_dist.glob("cuship-*.whl")
    version = wheel.name.split("-")[1]
    env = _env(tmp_path)
    maintainer = make_venv(tmp_path / "maintainer", env=env)
    find = ["--find-links", str(cuship_dist), f"cuship=={version}"]
    _run([*_UV, "pip", "install", "-q", "--python", str(maintainer), *find], env)
    doc = _generated(maintainer.parent / "cuship", tmp_path, env)
    assert _requirement(doc) == f"cuship[all]=={version}"

    venv = _install_with_the_job_lines(doc, env | {"UV_FIND_LINKS": str(cuship_dist)})
    said = _run([str(venv / "bin" / "cuship"), "--version"], env, cwd=tmp_path)
    assert f"cuship {version}" in said
    assert "an index or a --find-links folder" in said
    site = Path(
        _run(
            [str(venv / "bin" / "python"), "-I", "-c", "import cuship; print(cuship.__file__)"], env
        ).strip()
    ).parents[1]
    shipped = {p: h for p, h in _record(wheel).items() if p.startswith("cuship/")}
    assert shipped
    for path, digest in shipped.items():
        data = (site / path).read_bytes()
        got = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        assert f"sha256={got}" == digest, path  # the files of that wheel, byte for byte
