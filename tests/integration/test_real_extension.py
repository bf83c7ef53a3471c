"""A torch extension as third parties write them, unmodified: ``tests/fixtures/shapeconv`` has
causal-conv1d's setup.py traits (``import torch`` first, no ``[project]`` table, a version read
from ``__init__.py``, its own ``-gencode`` flags for sm_75/80/90, a bdist_wheel that downloads a
release wheel unless ``SHAPECONV_FORCE_BUILD=TRUE``).

Built for real through ``cuship build`` with nvcc against the installed (CPU) torch, then
installed from its sdist through ``cuship.backend`` under pip (isolated and not) and uv, from a
loopback index holding that build.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from cuship.index import write
from cuship.index.describe import describe_wheel
from cuship.serve.site import IndexServer
from tests.integration.indexsite import REPO, clean_env
from tests.integration.shapeconv import FIXTURE, make_sdist
from tests.integration.venvs import make_venv

torch = pytest.importorskip("torch", reason="the fixture builds against the installed torch")
TORCH = torch.__version__
TORCH_MINOR = ".".join(TORCH.split("+")[0].split(".")[:2])
CP = f"cp{sys.version_info.major}{sys.version_info.minor}"
JOB = f"shapeconv-0.3.1-{CP}-cu130-torch{TORCH_MINOR}"
pytestmark = pytest.mark.skipif(
    shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
    reason="the fixture's .cu compiles with nvcc",
)


def _copy(root: Path, **build: str) -> Path:
    """The fixture in ``root``, with ``[build]`` keys added to its cuship.toml."""
    dest = root / "shapeconv"
    shutil.copytree(FIXTURE, dest, ignore=shutil.ignore_patterns("dist", "build", "*.egg-info"))
    config = dest / "cuship.toml"
    running = f'python = ["{sys.version_info.major}.{sys.version_info.minor}"]'
    config.write_text(config.read_text().replace('python = ["3.11"]', running))
    if build:
        config = dest / "cuship.toml"
        lines = [
            line for line in config.read_text().splitlines() if line.split(" =")[0] not in build
        ]
        extra = [f"{key} = {value}" for key, value in build.items()]
        at = lines.index("[build]") + 1
        config.write_text("\n".join([*lines[:at], *extra, *lines[at:]]) + "\n")
    return dest


def _cuship(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUSHIP_")}
    return subprocess.run(
        [sys.executable, "-m", "cuship", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    """The fixture built once through ``cuship build --json``: its wheels folder and job."""
    source = _copy(tmp_path_factory.mktemp("shapeconv"))
    done = _cuship("build", str(source), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    (job,) = json.loads(done.stdout)
    return source / "dist" / "cuship" / "wheels", job


def test_the_configured_arch_is_all_that_nvcc_compiles_though_setup_py_names_three(
    built: tuple[Path, dict[str, object]],
) -> None:
    wheels, job = built
    assert job["job"] == JOB, "name and version come from setup.py and __init__.py"
    assert job["status"] == "built", job["detail"]
    assert job["nvcc"] == {
        "calls": job["nvcc"]["calls"],  # type: ignore[index]
        "device_compiles": 1,
        "asked": ["sm_75", "sm_80", "sm_90"],
        "compiled": ["sm_90"],
        "rewritten": 1,
    }
    report = job["report"]
    assert isinstance(report, dict)
    (extension,) = report["extensions"]
    assert extension["sass"] == ["90"] and extension["ptx"] == []
    log = (wheels / "logs" / f"{JOB}.log").read_text()
    assert "Guessing wheel URL" not in log, "SHAPECONV_FORCE_BUILD was set: no download tried"
    assert "1 had the project's own flags (sm_75, sm_80, sm_90) replaced" in log


def test_the_smoke_test_imports_it_over_the_torch_it_was_built_against(
    built: tuple[Path, dict[str, object]],
) -> None:
    wheels, job = built
    assert job["smoke_env"] == "system-site"
    assert job["smoke"] == f"shapeconv 0.3.1 shapeconv on c10 cpu (over torch {TORCH})"
    assert f"torch {TORCH}, the one it was built against" in str(job["smoke_note"])
    (wheel,) = wheels.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        meta = archive.read(f"shapeconv-0.3.1+cu130torch{TORCH_MINOR}.dist-info/METADATA")
    head = meta.decode().split("\n\n")[0]
    assert f"Requires-Dist: torch=={TORCH_MINOR}.*" in head.splitlines()
    assert not (wheels / "failed").exists()


def test_dry_run_says_how_the_arch_list_reaches_nvcc_and_sets_the_force_switch(
    tmp_path: Path,
) -> None:
    source = _copy(tmp_path)
    done = _cuship("build", str(source), "--dry-run", "--mode", "local")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "# arch 9.0:" in out and "cuship's nvcc replaces every device compile's" in out
    assert 'setup.py passes its own arch flags (nvcc_flags += ["-gencode"' in out
    assert "SHAPECONV_FORCE_BUILD=TRUE" in out
    assert "nvcc_shim.py make --cuda-home" in out


def test_arch_flags_stop_fails_the_first_compile_naming_the_projects_flags(
    tmp_path: Path,
) -> None:
    source = _copy(tmp_path, arch_flags='"stop"')
    done = _cuship("build", str(source))
    assert done.returncode == 1
    said = done.stdout + done.stderr
    assert "asks for sm_75, sm_80, sm_90" in said, said
    assert "-gencode arch=compute_75,code=sm_75" in said
    assert "[build] arch_flags = 'rewrite'" in said
    assert not list((source / "dist" / "cuship" / "wheels").glob("*.whl"))


def test_a_wheel_that_fails_its_smoke_test_is_kept_apart_and_never_indexed(
    tmp_path: Path,
) -> None:
    source = _copy(tmp_path, test_import='"shapeconv_missing"')
    done = _cuship("build", str(source), "--json")
    assert done.returncode == 1
    (job,) = json.loads(done.stdout)
    assert job["status"] == "failed" and "No module named 'shapeconv_missing'" in job["detail"]
    wheels = source / "dist" / "cuship" / "wheels"
    assert not list(wheels.glob("*.whl"))
    (kept,) = (wheels / "failed").glob("*.whl")
    assert f"kept apart as {kept}" in job["detail"]
    indexed = _cuship("index", str(wheels), "-o", str(tmp_path / "site"))
    assert not list((tmp_path / "site").glob("files/*.whl")), indexed.stdout + indexed.stderr


# --- from its sdist, through cuship.backend ------------------------------------------------


@pytest.fixture(scope="module")
def site(built: tuple[Path, dict[str, object]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("shapeconv-site")
    write([built[0]], site, describe=describe_wheel)
    return site


def _venv(root: Path, *, system_site: bool) -> Path:
    """A venv for the user: over this interpreter's site-packages (its torch) or bare."""
    return make_venv(root / "venv", pip=True, system_site=system_site)


@pytest.fixture(scope="module")
def torch_wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The installed torch and its dependencies as wheels, from the machine's own pip
    configuration (where the README's install took them): uv counts only what is installed in
    the venv itself, so a uv user's venv gets its own torch."""
    out = tmp_path_factory.mktemp("torch-wheels")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    argv = [sys.executable, "-m", "pip", "download", "-q", "--only-binary", ":all:"]
    done = subprocess.run(
        [*argv, "-d", str(out), f"torch=={TORCH}"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, f"cannot gather torch {TORCH} as wheels:\n{done.stderr}"
    return out


def _uv_venv(root: Path, wheels: Path, env: dict[str, str]) -> Path:
    """A venv with torch installed into it by uv, as a uv user's is."""
    python = root / "venv" / "bin" / "python"
    make_venv(root / "venv", env=env)
    argv = ["uv", "pip", "install", "-q", "--python", str(python), "--no-index"]
    done = subprocess.run(
        [*argv, "--find-links", str(wheels), f"torch=={TORCH}"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return python


def _install(
    frontend: str, python: Path, sdist: Path, wheelhouse: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    where = ["--no-index", "--find-links", str(wheelhouse)]
    if frontend == "uv":
        argv = ["uv", "pip", "install", "-v", "--python", str(python), *where, str(sdist)]
    elif frontend == "pip --no-build-isolation":
        argv = [str(python), "-m", "pip", "install", "-v", "--no-build-isolation", str(sdist)]
    else:
        argv = [str(python), "-m", "pip", "install", "-v", *where, str(sdist)]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=False)


def _torch_of(python: Path) -> str:
    code = "import importlib.metadata as m; print(m.version('torch'))"
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.mark.parametrize("frontend", ["pip", "pip --no-build-isolation", "uv"])
def test_the_sdist_installs_the_prebuilt_wheel_and_keeps_the_users_torch(
    frontend: str,
    server: IndexServer,
    cuship_wheelhouse: Path,
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    sdist = make_sdist(tmp_path, f"{server.url}simple", tmp_path)
    env = clean_env(tmp_path)
    env.pop("PYTHONPATH")
    if frontend == "uv":
        python = _uv_venv(tmp_path, request.getfixturevalue("torch_wheels"), env)
    else:
        python = _venv(tmp_path, system_site=True)
    if frontend == "pip --no-build-isolation":
        env["PYTHONPATH"] = str(REPO / "src")  # the user installed cuship beforehand
    done = _install(frontend, python, sdist, cuship_wheelhouse, env)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log
    judged = next(line for line in log.splitlines() if "cuship.backend: judging for" in line)
    assert str(python.parent.parent) in judged and judged.endswith(f": torch {TORCH}"), judged
    taken = f"using prebuilt shapeconv-0.3.1+cu130torch{TORCH_MINOR}-{CP}-{CP}-manylinux_2_24"
    assert taken in log, log
    assert "Guessing wheel URL" not in log and "nvcc" not in log.split(taken)[1]
    assert _torch_of(python) == TORCH, "the user's torch is the one left installed"
    code = "import shapeconv; print(shapeconv.backend(), shapeconv.__file__)"
    ran = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=False)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("shapeconv on c10 cpu") and str(tmp_path) in ran.stdout


def test_another_torch_minor_gets_no_prebuilt_wheel_and_no_other_torch(
    server: IndexServer, cuship_wheelhouse: Path, tmp_path: Path
) -> None:
    """A user whose torch is 2.12 (its files only: the judge reads them) gets neither the 2.13
    wheel nor a source build against another torch: the install stops, naming both."""
    sdist = make_sdist(tmp_path, f"{server.url}simple", tmp_path)
    python = _venv(tmp_path, system_site=False)
    (site,) = python.parent.parent.glob("lib/python*/site-packages")
    (site / "torch").mkdir()
    (site / "torch" / "version.py").write_text("__version__ = '2.12.0'\ncuda = '13.0'\n")
    info = site / "torch-2.12.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.12.0\n")
    env = clean_env(tmp_path)
    env.pop("PYTHONPATH")
    done = _install("pip", python, sdist, cuship_wheelhouse, env)
    log = done.stdout + done.stderr
    assert done.returncode != 0, log
    assert f"built for torch=={TORCH_MINOR}.*" in log and "installed torch is 2.12.0" in log, log
    assert "building against the torch installed where it goes: torch==2.12.0" in log
    assert not (site / "shapeconv").exists() and _torch_of(python) == "2.12.0"
