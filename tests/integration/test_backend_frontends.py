"""The example configured with ``build-backend = "cuship.backend"``, under every real frontend.

A copy of examples/cuvecops with the README's configuration (``requires = ["cuship"]``, the real
backend scikit-build-core named in ``[tool.cuship.prebuilt]``); cuship reaches the frontends'
build environments as a wheel through --find-links; the prebuilt wheel is the example wheel
labelled ``+cu130`` (no torch in the label: the venvs have no torch), served on loopback by
``cuship serve``'s server. The machine is a fake H100 with a CUDA 13.0 driver.

- ``python -m build --sdist`` and ``uv build --sdist`` make the sdist (the real backend's);
- pip install, uv pip install, pip wheel and pip install --no-build-isolation of that sdist take
  the prebuilt wheel with nvcc, cmake and the C compilers failing first on PATH (never run),
  download it once, install nothing from build-requires, and the result carries cuship.json;
- with the server down, pip and uv build the same sdist from source with the real nvcc.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote

import pytest

import cuship
from cuship.index import write
from cuship.index.describe import describe_wheel
from cuship.resolve.provenance import Handover, read_dist
from cuship.serve.site import IndexServer, serve
from cuship.wheel.write.retag import record_hash, retag
from tests.integration.indexsite import REPO, clean_env
from tests.integration.venvs import make_venv

EXAMPLE = REPO / "examples" / "cuvecops"
_CP = f"cp{sys.version_info.major}{sys.version_info.minor}"
_PLATFORM = sysconfig.get_platform().replace("-", "_").replace(".", "_")
CU130 = f"cuvecops-0.1.0+cu130-{_CP}-{_CP}-{_PLATFORM}.whl"
HANDED = f"cuvecops-0.1.0-{_CP}-{_CP}-{_PLATFORM}.whl"
MACHINE = {"CUSHIP_GPUS": "H100", "CUSHIP_DRIVER_CUDA": "13.0"}
HEADER = """[build-system]
requires = ["cuship"]
build-backend = "cuship.backend"

[tool.cuship.prebuilt]
index = "{index}"
backend = "scikit_build_core.build"
build-requires = ["scikit-build-core>=0.10"]

"""
FRONTENDS = ("pip install", "uv pip install", "pip wheel", "pip install --no-build-isolation")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("frontends")


@pytest.fixture(scope="module")
def site(workdir: Path, example_wheel: Path) -> Path:
    wheels = workdir / "wheels"
    retag(example_wheel, local="cu130", out_dir=wheels)
    write([wheels], workdir / "site", describe=describe_wheel)
    return workdir / "site"


def _env(tmp: Path, wheelhouse: Path, **extra: str) -> dict[str, str]:
    """A clean environment; cuship comes only from the wheelhouse, nvcc is found as users'
    would be (no CUSHIP_NVCC), build environments read only the wheelhouse."""
    env = clean_env(tmp, UV_CACHE_DIR=str(tmp / "uv-cache"), **extra)
    env.pop("PYTHONPATH")
    env.pop("CUSHIP_NVCC")
    env.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheelhouse))
    return env


def _run(args: list[str], env: dict[str, str], cwd: Path | None = None) -> str:
    done = subprocess.run(
        args, env=env, cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, f"{args}\n{log}"
    return log


def _project(root: Path, index: str) -> Path:
    """A copy of the example whose pyproject puts cuship.backend in front of scikit-build-core."""
    dest = root / "cuvecops"
    skip = shutil.ignore_patterns("build", "dist", "__pycache__", ".*")
    shutil.copytree(EXAMPLE, dest, ignore=skip)
    text = (dest / "pyproject.toml").read_text()
    (dest / "pyproject.toml").write_text(
        HEADER.format(index=index) + text[text.index("[project]") :]
    )
    return dest


def _sdist(tool: str, index: str, root: Path, wheelhouse: Path) -> tuple[Path, str]:
    """The sdist ``python -m build --sdist`` or ``uv build --sdist`` makes, and the log."""
    project, out = _project(root, index), root / "dist"
    if tool == "build":
        args = [sys.executable, "-m", "build", "--sdist", "-o", str(out), str(project)]
    else:
        args = ["uv", "build", "--sdist", "--python", sys.executable, "--no-index"]
        args += ["--find-links", str(wheelhouse), "-o", str(out), str(project)]
    log = _run(args, _env(root, wheelhouse))
    (sdist,) = out.glob("*.tar.gz")
    return sdist, log


@pytest.fixture(scope="module")
def sdist(server: IndexServer, workdir: Path, cuship_wheelhouse: Path) -> tuple[Path, str]:
    return _sdist("build", f"{server.url}simple", workdir / "by-build", cuship_wheelhouse)


def _loud_tools(root: Path, marker: Path) -> str:
    """A PATH whose compilers and build tools fail and leave ``marker`` behind."""
    tools = root / "loud-bin"
    tools.mkdir()
    for name in ("nvcc", "cmake", "ninja", "gcc", "g++", "cc", "c++"):
        script = tools / name
        script.write_text(f'#!/bin/sh\necho "$0 ran" >> {marker}\necho "{name} RAN" >&2\nexit 1\n')
        script.chmod(0o755)
    return f"{tools}{os.pathsep}{os.environ['PATH']}"


def _venv(root: Path, *, with_pip: bool = True) -> Path:
    return make_venv(root / "venv", pip=with_pip)


def _members(tar: Path) -> dict[str, bytes]:
    with tarfile.open(tar) as archive:
        top = archive.getnames()[0].split("/")[0]
        wanted = ("pyproject.toml", "PKG-INFO", "csrc/ops.cu")
        return {n: archive.extractfile(f"{top}/{n}").read() for n in wanted}  # type: ignore[union-attr]


def test_build_and_uv_build_make_the_sdist(
    sdist: tuple[Path, str], server: IndexServer, workdir: Path, cuship_wheelhouse: Path
) -> None:
    by_build, log = sdist
    by_uv, _ = _sdist("uv", f"{server.url}simple", workdir / "by-uv", cuship_wheelhouse)
    assert "- scikit-build-core>=0.10" in log  # the frontend installed the real backend first
    for made in (by_build, by_uv):
        assert made.name == "cuvecops-0.1.0.tar.gz"
        files = _members(made)
        assert b'build-backend = "cuship.backend"' in files["pyproject.toml"]
        assert f'index = "{server.url}simple"'.encode() in files["pyproject.toml"]
        assert b"\nVersion: 0.1.0\n" in files["PKG-INFO"]
        assert files["csrc/ops.cu"] == (EXAMPLE / "csrc" / "ops.cu").read_bytes()


def _install(
    frontend: str, python: Path, target: Path, wheelhouse: Path, out: Path, env: dict[str, str]
) -> str:
    """Run ``frontend`` on ``target`` for the venv of ``python``; the log."""
    where = ["--no-index", "--find-links", str(wheelhouse)]
    pip = [str(python), "-m", "pip"]
    if frontend == "uv pip install":
        uv = ["uv", "pip", "install", "-v", "--no-deps", "--python", str(python)]
        return _run([*uv, *where, str(target)], env)
    if frontend == "pip wheel":
        return _run([*pip, "wheel", "-v", "--no-deps", *where, "-w", str(out), str(target)], env)
    if frontend == "pip install --no-build-isolation":  # the user installs requires first
        _run([*pip, "install", "-q", *where, "cuship"], env)
        return _run([*pip, "install", "-v", "--no-build-isolation", "--no-deps", str(target)], env)
    return _run([*pip, "install", "-v", "--no-deps", *where, str(target)], env)


def _installed(python: Path) -> tuple[Handover | None, list[str], dict[str, str]]:
    """cuvecops's provenance, installed files and RECORD hashes in the venv of ``python``."""
    (dist_info,) = python.parent.parent.glob("lib/python*/site-packages/cuvecops-*.dist-info")
    dist = metadata.PathDistribution(dist_info)
    rows = csv.reader(io.StringIO(dist.read_text("RECORD") or ""))
    hashes = {row[0]: row[1] for row in rows if row}
    return read_dist(dist), [str(f) for f in dist.files or ()], hashes


def _wheel(path: Path) -> tuple[Handover | None, list[str], dict[str, str]]:
    """The same for a wheel file."""
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        data = archive.read("cuvecops-0.1.0.dist-info/cuship.json")
        record = archive.read("cuvecops-0.1.0.dist-info/RECORD").decode()
    hashes = {row[0]: row[1] for row in csv.reader(io.StringIO(record)) if row}
    return Handover.from_json(json.loads(data), path.name), names, hashes


@pytest.mark.parametrize("frontend", FRONTENDS)
def test_frontends_take_the_prebuilt_wheel_and_compile_nothing(
    frontend: str,
    sdist: tuple[Path, str],
    server: IndexServer,
    site: Path,
    cuship_wheelhouse: Path,
    tmp_path: Path,
) -> None:
    marker = tmp_path / "compiler-ran"
    env = _env(tmp_path, cuship_wheelhouse, PATH=_loud_tools(tmp_path, marker), **MACHINE)
    if frontend == "pip wheel":  # any pip will do: the wheel is built in an isolated env
        python = Path(sys.executable)
    else:
        python = _venv(tmp_path, with_pip=frontend != "uv pip install")
    start = len(server.requests)
    log = _install(frontend, python, sdist[0], cuship_wheelhouse, tmp_path / "out", env)
    assert not marker.exists(), marker.read_text()
    taken = f"cuship.backend: using prebuilt {CU130} (sha256 verified) from {server.url}files/"
    assert log.count(taken) == 1, log
    line = log[log.index(taken) :].splitlines()[0]
    assert "H100 (sm_90), driver CUDA 13.0); best of 1 fitting, 0 rejected: CUDA 13.0" in line
    assert "scikit-build-core" not in log and "scikit_build_core" not in log  # never installed
    downloads = [r for r in server.requests[start:] if unquote(r.path).endswith(f"/{CU130}")]
    assert len(downloads) == 1  # one decision for all the hooks of the run
    if frontend == "pip wheel":
        provenance, files, hashes = _wheel(tmp_path / "out" / HANDED)
    else:
        provenance, files, hashes = _installed(python)
    served = (site / "files" / CU130).read_bytes()
    assert provenance == Handover(
        name="cuvecops",
        version="0.1.0",
        kind="prebuilt",
        why=line.split(".whl: ", 1)[1].strip(),  # what stderr said is what the record says
        filename=CU130,
        sha256=hashlib.sha256(served).hexdigest(),
        url=f"{server.url}files/{CU130.replace('+', '%2B')}",
        index=f"{server.url}simple",
        label="cu130",
        cuship=cuship.__version__,
    )
    assert hashes["cuvecops-0.1.0.dist-info/cuship.json"] == record_hash(provenance.to_bytes())
    assert any(f.startswith("cuvecops/_cuda") and f.endswith(".so") for f in files)


@pytest.mark.parametrize("frontend", ["pip install", "uv pip install"])
def test_with_the_server_down_the_frontend_builds_the_sdist_from_source(
    frontend: str, site: Path, cuship_wheelhouse: Path, tmp_path: Path
) -> None:
    with serve(site, "127.0.0.1", 0) as doomed:
        index = f"{doomed.url}simple"
        made, _ = _sdist("uv", index, tmp_path, cuship_wheelhouse)
    # one SASS arch keeps the real nvcc build short
    env = _env(tmp_path, cuship_wheelhouse, CMAKE_ARGS="-DCMAKE_CUDA_ARCHITECTURES=90-real")
    env.update(MACHINE)
    python = _venv(tmp_path, with_pip=frontend != "uv pip install")
    log = _install(frontend, python, made, cuship_wheelhouse, tmp_path, env)
    assert (
        "cuship.backend: building cuvecops from source with scikit_build_core.build: no prebuilt "
        f"wheel: reading '{index}/cuvecops/' failed: cannot connect"
    ) in log
    assert "scikit-build-core" in log  # the real backend was installed for the build
    if frontend == "pip install":  # pip -v shows the build's own output
        assert "Installing backend dependencies" in log
        assert "Building CUDA object" in log  # nvcc compiled the kernels here
    provenance, files, _ = _installed(python)
    assert provenance is not None and provenance.kind == "source"
    assert provenance.backend == "scikit_build_core.build" and provenance.index == index
    assert provenance.filename is None and provenance.why.startswith("no prebuilt wheel: ")
    assert any(f.startswith("cuvecops/_cuda") and f.endswith(".so") for f in files)
