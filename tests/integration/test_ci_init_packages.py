"""``cuship ci init`` of a packages.yml that names no CUDA and no device_code plans the jobs
``cuship matrix`` plans here: this host's CUDA, an sdist with no device code as one +cpu job;
the CUDA it found reaches the jobs as CUSHIP_MATRIX_CUDA, and the drift check, regenerating the
file with it set, finds nothing changed. The sdists are made here and found off the network."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.clirun import cuship
from tests.integration.plainc import offline_from, plain_c_sdists

PIN = ("--cuship", "cuship[all]==0.1.0")  # the dev install is editable: the pin is named
PYTHON = "3.11"


def _cuda_sdist(dist: Path) -> None:
    """An sdist of ``cgpu`` 1.0 holding a ``.cu`` kernel (read for device code, never built)."""
    files = {
        "PKG-INFO": "Metadata-Version: 2.1\nName: cgpu\nVersion: 1.0\n",
        "setup.py": "from setuptools import setup\nsetup(name='cgpu', version='1.0')\n",
        "cgpu/kernel.cu": "__global__ void k(float *x) { x[threadIdx.x] += 1.0f; }\n",
    }
    with tarfile.open(dist / "cgpu-1.0.tar.gz", "w:gz") as tarred:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"cgpu-1.0/{name}")
            info.size = len(data)
            tarred.addfile(info, io.BytesIO(data))


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("index")
    dist = plain_c_sdists(root, "1.0")
    _cuda_sdist(dist)
    (root / "config").mkdir()
    (root / "config" / "packages.yml").write_text(
        f'matrix: {{python: ["{PYTHON}"], arch: ["9.0"]}}\n'
        "packages:\n  cplain: {versions: ['1.0']}\n  cgpu: {versions: ['1.0']}\n",
        encoding="utf-8",
    )
    env = offline_from(dist) | {"XDG_CACHE_HOME": str(root / "cache")}
    return root, env


def _matrix(root: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    done = cuship("matrix", root, "--format", "json", env=env, drop=("CUSHIP_MATRIX_CUDA",))
    assert done.returncode == 0, done.stderr
    jobs: list[dict[str, Any]] = json.loads(done.stdout)["jobs"]
    return jobs


def _gitlab(root: Path, env: dict[str, str]) -> str:
    done = cuship(
        "ci", "init", *PIN, root, "--provider", "gitlab", "--print", "-o", root,
        env=env, drop=("CUSHIP_MATRIX_CUDA",),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_ci_init_plans_the_jobs_cuship_matrix_plans(index: tuple[Path, dict[str, str]]) -> None:
    root, env = index
    jobs = _matrix(root, env)
    by_project = {job["project"]: job for job in jobs}
    assert by_project["cplain"]["id"] == f"cplain-1.0-cp{PYTHON.replace('.', '')}-cpu"
    cuda = by_project["cgpu"]["cuda"]  # this host's (nvcc's) CUDA, or the one cuship names
    doc = yaml.safe_load(_gitlab(root, env))
    entries = doc["build"]["parallel"]["matrix"]
    assert [e["JOB"] for e in entries] == [job["id"] for job in jobs]
    found = doc["variables"]["CUSHIP_MATRIX_CUDA"]["value"]
    assert cuda.startswith(found + "."), (cuda, found)


def test_the_drift_check_regenerates_the_same_file_with_the_axis_it_was_given(
    index: tuple[Path, dict[str, str]],
) -> None:
    """The generated matrix-drift job reruns ci init with CUSHIP_MATRIX_CUDA set (on a runner
    with another nvcc, or none): the file is the same, and so is every plan made with it."""
    root, env = index
    committed = _gitlab(root, env)
    axis = yaml.safe_load(committed)["variables"]["CUSHIP_MATRIX_CUDA"]["value"]
    pinned = env | {"CUSHIP_MATRIX_CUDA": axis}
    regenerated = cuship(
        "ci", "init", *PIN, root, "--provider", "gitlab", "--print", "-o", root, env=pinned
    )
    assert regenerated.returncode == 0, regenerated.stderr
    assert regenerated.stdout == committed
    other = cuship("matrix", root, "--format", "json", env=env | {"CUSHIP_MATRIX_CUDA": "12.8"})
    assert other.returncode == 0, other.stderr
    ids = [job["id"] for job in json.loads(other.stdout)["jobs"]]
    tag = f"cp{PYTHON.replace('.', '')}"
    assert ids == [f"cplain-1.0-{tag}-cpu", f"cgpu-1.0-{tag}-cu128"]
    assert "CUDA 12.8 from CUSHIP_MATRIX_CUDA" in other.stderr
