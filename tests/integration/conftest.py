"""Integration tests run real tools; every test here carries the ``integration`` marker."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cuship.serve.site import IndexServer, serve

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.integration)


# --- the example wheel, built once per session and cached by a hash of its sources ----------

import hashlib  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

REPO = HERE.parents[1]
EXAMPLE = REPO / "examples" / "cuvecops"
NVCC = Path("/usr/local/cuda/bin/nvcc")
# SASS for sm_80, sm_90, sm_100, sm_120 and PTX for compute_80 and compute_120, in CMake's spelling.
EXAMPLE_CUDA_ARCHS = "80-real;80-virtual;90-real;100-real;120-real;120-virtual"
_NOT_SOURCES = {"build", "dist", "tests", "cuship.toml"}


def example_source_hash() -> str:
    """Hash of what goes into the example wheel (sources, arch list, Python), for the cache key."""
    digest = hashlib.sha256()
    for path in sorted(EXAMPLE.rglob("*")):
        rel = path.relative_to(EXAMPLE)
        skipped = rel.parts[0] in _NOT_SOURCES or rel.parts[0].startswith(".")
        if skipped or not path.is_file() or "__pycache__" in rel.parts:
            continue
        digest.update(rel.as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(f"{EXAMPLE_CUDA_ARCHS}|{sys.implementation.cache_tag}|{NVCC}".encode())
    return digest.hexdigest()[:16]


def _build_example_wheel(dest: Path) -> None:
    env = dict(os.environ)
    env.pop("CUSHIP_CUDA_ARCHS", None)
    env.update(
        CUDACXX=str(NVCC),
        CMAKE_ARGS=f"-DCMAKE_CUDA_ARCHITECTURES={EXAMPLE_CUDA_ARCHS}",
        PATH=f"{NVCC.parent}{os.pathsep}{env.get('PATH', '')}",
    )
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    cmd += ["-w", str(dest), str(EXAMPLE)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.fail(f"building the example wheel failed ({cmd!r}):\n{proc.stdout}\n{proc.stderr}")


@pytest.fixture(scope="session")
def example_wheel() -> Path:
    """The cuvecops wheel built with nvcc for sm_80/90/100/120 + compute_80/120 (cached)."""
    cache = REPO / "build" / "test-cache" / f"cuvecops-{example_source_hash()}"
    wheels = sorted(cache.glob("cuvecops-*.whl"))
    if wheels:
        return wheels[0]
    if not NVCC.is_file():
        pytest.fail(f"nvcc not found at {NVCC}: the example wheel needs the CUDA toolkit")
    for stale in cache.parent.glob("cuvecops-*"):  # wheels of older sources
        if not stale.name.startswith(cache.name):
            shutil.rmtree(stale, ignore_errors=True)
    staging = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
    _build_example_wheel(staging)
    try:
        staging.rename(cache)
    except OSError:  # another worker finished first; use its wheel
        shutil.rmtree(staging, ignore_errors=True)
    wheels = sorted(cache.glob("cuvecops-*.whl"))
    assert wheels, f"pip wheel produced no cuvecops wheel in {cache}"
    return wheels[0]


# --- cuship as a wheel, for the build environments of real frontends -------------------------


def _source_copy(into: Path) -> Path:
    """What setuptools builds cuship's wheel from (pyproject, README, LICENSE, src), copied:
    an in-tree build writes ``build/`` and ``*.egg-info`` in the checkout, and two test
    workers building it there at once collide (``File exists: build/bdist...``)."""
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, into / name)
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(REPO / "src", into / "src", ignore=skip)
    return into


@pytest.fixture(scope="session")
def cuship_wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """cuship's wheel built from this checkout, its dependencies' wheels, and the real
    backends the backend tests build with (setuptools, scikit-build-core), for --find-links.

    Built once per session; the dependencies are downloaded with the machine's own pip
    configuration (the frontends under test then read only this directory).
    """
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib

    out = tmp_path_factory.mktemp("cuship-wheelhouse")
    pip = [sys.executable, "-m", "pip"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    source = _source_copy(tmp_path_factory.mktemp("cuship-source"))
    build = [*pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), str(source)]
    done = subprocess.run(build, capture_output=True, text=True, env=env, cwd=out, check=False)
    if done.returncode != 0:
        pytest.fail(f"cannot build cuship's wheel:\n{done.stdout}\n{done.stderr}")
    needs = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    backends = ["setuptools>=68", "scikit-build-core>=0.10"]
    fetch = [*pip, "download", "-q", "-d", str(out), *needs, *backends]
    done = subprocess.run(fetch, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        pytest.fail(f"cannot gather cuship's dependencies as wheels:\n{done.stderr}")
    return out


@pytest.fixture(scope="module")
def server(site: Path) -> Iterator[IndexServer]:
    """The module's ``site`` fixture served on a loopback port for the module's tests."""
    with serve(site, "127.0.0.1", 0) as running:
        yield running


# --- cuship's own distribution: sdist and wheel by `python -m build`, once per session -------


@pytest.fixture(scope="session")
def cuship_dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder holding cuship's sdist and wheel, built by ``python -m build`` from a copy of
    this checkout (the wheel from the sdist); :func:`tests.integration.ci_engine.build_cuship_wheel`."""
    from tests.integration.ci_engine import build_cuship_wheel

    return build_cuship_wheel(tmp_path_factory.mktemp("cuship-dist"))
