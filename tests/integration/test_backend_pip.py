"""`build-backend = "cuship.backend"` under real pip: prebuilt when one fits, source otherwise.

cuship reaches pip's isolated build environment as a wheel built from this checkout, with its
dependencies, through --find-links (downloaded once with the machine's own pip configuration).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from cuship.index import write
from cuship.index.describe import describe_wheel
from cuship.serve.site import IndexServer, serve
from tests.integration.cudawheel import relabel_for_cuda
from tests.integration.indexsite import REPO, clean_env
from tests.integration.venvs import make_venv

EXAMPLE = REPO / "examples" / "cuvecops"
_CP = f"cp{sys.version_info.major}{sys.version_info.minor}"  # the example wheel's builder
CU128 = f"cuvecops-0.1.0+cu128-{_CP}-{_CP}-linux_x86_64.whl"
DOWN = "http://127.0.0.1:1/simple"  # nothing listens on port 1: connection refused at once


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("backend")


@pytest.fixture(scope="module")
def wheelhouse(cuship_wheelhouse: Path) -> Path:
    """cuship's wheel and its dependencies' wheels, for pip's isolated build environments."""
    return cuship_wheelhouse


def _site(workdir: Path, example_wheel: Path, name: str, *, tamper: bool) -> Path:
    wheels = workdir / f"{name}-wheels"
    relabel_for_cuda(example_wheel, "cu128", wheels)
    site = workdir / name
    write([wheels], site, describe=describe_wheel)
    if tamper:
        target = site / "files" / CU128
        target.unlink()
        data = (wheels / CU128).read_bytes()  # other bytes, the declared size: the hash says
        target.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    return site


@pytest.fixture(scope="module")
def site(workdir: Path, example_wheel: Path) -> Path:
    return _site(workdir, example_wheel, "site", tamper=False)


@pytest.fixture(scope="module")
def venv(workdir: Path) -> Path:
    return make_venv(workdir / "venv", pip=True)


def _sdist(root: Path, name: str, pyproject: str, files: dict[str, str]) -> Path:
    """A source distribution NAME-0.1.0.tar.gz holding ``pyproject`` and ``files``."""
    tree = root / f"{name}-0.1.0"
    tree.mkdir(parents=True, exist_ok=True)
    (tree / "pyproject.toml").write_text(pyproject)
    (tree / "PKG-INFO").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n")
    for rel, text in files.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    sdist = root / f"{name}-0.1.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as archive:
        archive.add(tree, arcname=tree.name)
    return sdist


def _example_sdist(root: Path, index: str) -> Path:
    """The example, but built by cuship.backend with scikit-build-core as the real backend."""
    ignore = shutil.ignore_patterns("build", "dist", "__pycache__", ".*")
    files = {
        str(p.relative_to(EXAMPLE)): p.read_text()
        for p in EXAMPLE.rglob("*")
        if p.is_file() and not ignore(str(p.parent), [p.name]) and "build" not in p.parts
        if p.suffix in (".py", ".cu", ".cuh", ".h", ".cpp", ".txt", ".md", ".toml")
    }
    project = files.pop("pyproject.toml")
    rest = project[project.index("[project]") :]
    header = (
        '[build-system]\nrequires = ["cuship"]\nbuild-backend = "cuship.backend"\n\n'
        f'[tool.cuship.prebuilt]\nindex = "{index}"\nbackend = "scikit_build_core.build"\n'
        'build-requires = ["scikit-build-core>=0.10"]\n\n'
    )
    return _sdist(root, "cuvecops", header + rest, files)


def _tiny_sdist(root: Path, marker: Path) -> Path:
    """A setuptools project whose source build leaves ``marker`` behind."""
    pyproject = (
        '[build-system]\nrequires = ["cuship"]\nbuild-backend = "cuship.backend"\n\n'
        '[project]\nname = "tinyp"\nversion = "0.1.0"\n\n'
        f'[tool.cuship.prebuilt]\nindex = "{DOWN}"\nbackend = "setuptools.build_meta"\n'
        'build-requires = ["setuptools>=68"]\n'
    )
    setup = (
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('built')\n"
        "from setuptools import setup\nsetup(packages=['tinyp'])\n"
    )
    files = {"setup.py": setup, "tinyp/__init__.py": "VERSION = 'source'\n"}
    return _sdist(root, "tinyp", pyproject, files)


def _loud_tools(root: Path, marker: Path) -> str:
    """A PATH whose compilers and build tools fail loudly and leave ``marker``."""
    tools = root / "loud-bin"
    tools.mkdir(exist_ok=True)
    for name in ("nvcc", "cmake", "ninja", "gcc", "g++", "cc", "c++"):
        script = tools / name
        script.write_text(f'#!/bin/sh\necho "$0 ran" >> {marker}\necho "{name} RAN" >&2\nexit 1\n')
        script.chmod(0o755)
    return f"{tools}{os.pathsep}{os.environ['PATH']}"


def _pip_install(
    venv: Path, wheelhouse: Path, target: Path, workdir: Path, index: str | None, **env: str
) -> subprocess.CompletedProcess[str]:
    """pip install TARGET; ``index`` None: pip itself reads only the wheelhouse."""
    environ = clean_env(workdir, CUSHIP_TORCH="none", CUSHIP_CUDA_LIBS="12,13", **env)
    environ.pop("PYTHONPATH")  # cuship must come from the wheel inside the build environment
    subprocess.run([str(venv), "-m", "pip", "uninstall", "-y", "-q", "cuvecops", "tinyp"])
    where = ["--no-index"] if index is None else ["--index-url", index]
    args = [str(venv), "-m", "pip", "install", "-v", "--no-deps", *where]
    return subprocess.run(
        [*args, "--find-links", str(wheelhouse), str(target)],
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _installed(venv: Path, name: str) -> str:
    code = f"import importlib.metadata as m; print(m.version({name!r}), *m.files({name!r}))"
    done = subprocess.run([str(venv), "-c", code], capture_output=True, text=True, check=False)
    return done.stdout.strip() or "not installed"


def test_the_prebuilt_wheel_is_taken_and_nothing_compiles(
    server: IndexServer, venv: Path, wheelhouse: Path, workdir: Path
) -> None:
    marker = workdir / "compiler-ran"
    sdist = _example_sdist(workdir / "example-sdist", f"{server.url}simple")
    done = _pip_install(
        venv,
        wheelhouse,
        sdist,
        workdir,
        f"{server.url}simple",
        PATH=_loud_tools(workdir, marker),
        CUSHIP_GPUS="H100",
        CUSHIP_DRIVER_CUDA="12.8",
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, log
    assert log.count(f"cuship.backend: using prebuilt {CU128} (sha256 verified)") == 1
    assert "Installing backend dependencies" not in log  # scikit-build-core never installed
    assert not marker.exists(), marker.read_text()
    installed = _installed(venv, "cuvecops")
    assert installed.startswith("0.1.0 ")  # the sdist's version, as pip demands
    assert "cuvecops/_cuda" in installed and ".so" in installed  # the compiled extension


def test_a_tampered_prebuilt_wheel_is_refused(
    workdir: Path, example_wheel: Path, venv: Path, wheelhouse: Path
) -> None:
    site = _site(workdir, example_wheel, "tampered", tamper=True)
    sdist = _example_sdist(workdir / "tampered-sdist", DOWN)
    with serve(site, "127.0.0.1", 0) as running:
        done = _pip_install(
            venv,
            wheelhouse,
            sdist,
            workdir,
            f"{running.url}simple",
            CUSHIP_PREBUILT_INDEX=f"{running.url}simple",
            CUSHIP_GPUS="H100",
            CUSHIP_DRIVER_CUDA="12.8",
        )
    log = done.stdout + done.stderr
    assert done.returncode != 0, log
    assert f"sha256 mismatch for '{CU128}'" in log
    assert _installed(venv, "cuvecops") == "not installed"


def test_with_the_server_down_it_builds_from_source(
    venv: Path, wheelhouse: Path, workdir: Path
) -> None:
    marker = workdir / "tinyp-built"
    sdist = _tiny_sdist(workdir / "tiny-sdist", marker)
    done = _pip_install(venv, wheelhouse, sdist, workdir, None, CUSHIP_GPUS="none")
    log = done.stdout + done.stderr
    assert done.returncode == 0, log
    assert "cuship.backend: building tinyp from source with setuptools.build_meta" in log
    assert f"no prebuilt wheel: reading '{DOWN}/tinyp/' failed: cannot connect" in log
    assert marker.read_text() == "built"
    assert _installed(venv, "tinyp").startswith("0.1.0 ")


def test_no_build_fails_clearly_instead_of_compiling(
    venv: Path, wheelhouse: Path, workdir: Path
) -> None:
    marker = workdir / "tinyp-no-build"
    sdist = _tiny_sdist(workdir / "no-build-sdist", marker)
    done = _pip_install(
        venv, wheelhouse, sdist, workdir, None, CUSHIP_GPUS="none", CUSHIP_NO_BUILD="1"
    )
    log = done.stdout + done.stderr
    assert done.returncode != 0
    assert "CUSHIP_NO_BUILD=1 and no prebuilt wheel" in log
    assert "refusing to build tinyp from source" in log
    assert not marker.exists()


def test_an_editable_install_builds_from_the_tree(
    venv: Path, wheelhouse: Path, workdir: Path
) -> None:
    """pip asks which hooks the backend has before -e, with only cuship installed."""
    marker = workdir / "tinyp-editable"
    tree = _tiny_sdist(workdir / "editable", marker).parent / "tinyp-0.1.0"
    editable = Path(f"-e{tree}")  # pip reads -e<dir> as -e <dir>
    done = _pip_install(venv, wheelhouse, editable, workdir, None, CUSHIP_GPUS="none")
    log = done.stdout + done.stderr
    assert done.returncode == 0, log
    assert (
        "cuship.backend: building tinyp from source with setuptools.build_meta: an editable "
        "install is built from its source tree"
    ) in log
    assert marker.read_text() == "built"
    assert _installed(venv, "tinyp").startswith("0.1.0 ")
    assert not (tree / ".cuship-prebuilt").exists()
