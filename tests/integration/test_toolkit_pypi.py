"""CUDA toolkits fetched from PyPI for real: every pinned wheel is on the index, a fetched 13.0
toolkit compiles SASS for sm_90 with nothing of the host's CUDA in reach, and the example built
with a fetched toolkit of another 13.x minor (13.1, the host has 13.0) verifies and imports.

These download about 100 MB per toolkit; they are skipped, saying so, only when the index
cannot be reached at all.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
import zipfile
from functools import partial
from pathlib import Path

import pytest
from packaging.version import Version

from cuship.docs.documents import schema_file
from cuship.resolve.fetch import fetch_page
from cuship.toolkit import catalog, index_url
from cuship.toolkit.layout import pick_file
from tests.integration import clirun
from tests.jsondocs import schema_errors

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cuvecops"
INDEX = index_url(os.environ)
cuship = partial(clirun.cuship, timeout=900, drop=("CUDA_HOME", "CUDA_PATH", "CUDACXX"))


def _reachable() -> str | None:
    url = f"{INDEX.rstrip('/')}/nvidia-cuda-nvcc/"
    request = urllib.request.Request(url, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=20):
            return None
    except (urllib.error.URLError, OSError) as err:
        return f"the toolkit index {url} cannot be reached ({err}); nothing to download from"


pytestmark = pytest.mark.network


@pytest.fixture(scope="module", autouse=True)
def _index_reachable() -> None:
    reason = _reachable()
    if reason is not None:
        pytest.skip(reason)


@pytest.fixture(scope="module")
def toolkits(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A toolkit cache of this test run, empty at first: the first install downloads."""
    return tmp_path_factory.mktemp("toolkits")


HOST_CUDA = ("CUDA_HOME", "CUDA_PATH", "CUDACXX")


def _host_free_env(toolkits: Path) -> dict[str, str]:
    """The toolkit cache, and a PATH on which the host's CUDA cannot stand in for a fetched one
    (with ``HOST_CUDA`` dropped)."""
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if "cuda" not in p)
    return {"CUSHIP_TOOLKITS": str(toolkits), "PATH": path}


def test_every_pinned_wheel_is_on_the_index_with_a_sha256() -> None:
    rows = catalog()
    for component in rows.components:
        page = fetch_page(INDEX, component.package, manifest=False)
        for release in rows.releases:
            version = release.wheels[component.package]
            chosen = pick_file(page.candidates, component.package, version, "x86_64")
            assert chosen.sha256 and len(chosen.sha256) == 64, chosen.filename


def test_a_fetched_toolkit_compiles_sass_for_sm_90(toolkits: Path, tmp_path: Path) -> None:
    env = _host_free_env(toolkits)
    first = cuship("toolkit", "install", "13.0", "--json", env=env)
    assert first.returncode == 0, first.stderr[-3000:]
    made = json.loads(first.stdout)
    assert schema_errors(schema_file("toolkit-install"), made) == []
    assert (made["cuda"], made["nvcc_version"], made["reused"]) == ("13.0.2", "13.0.88", False)
    assert made["downloaded_bytes"] > 50_000_000
    again = cuship("toolkit", "install", "13.0", "--offline", "--json", env=env)
    assert again.returncode == 0 and json.loads(again.stdout)["reused"] is True
    prefix = Path(made["prefix"])
    assert cuship("toolkit", "path", "13.0.2", env=env).stdout.strip() == str(prefix)

    source = tmp_path / "scale.cu"
    source.write_text(
        "#include <cuda_runtime.h>\n#include <thrust/device_vector.h>\n"
        "__global__ void scale(float* x, float a) { x[threadIdx.x] *= a; }\n"
        'extern "C" int launch(float* x) { scale<<<1, 32>>>(x, 2.f); return cudaGetLastError(); }\n'
    )
    library = tmp_path / "libscale.so"
    compiled = subprocess.run(
        [str(prefix / "bin" / "nvcc"), "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC",
         "-cudart", "shared", str(source), "-o", str(library)],
        env={k: v for k, v in os.environ.items() if k not in HOST_CUDA} | env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert compiled.returncode == 0, compiled.stderr[-3000:]
    inspected = cuship("inspect", str(library), "--json")
    assert inspected.returncode == 0, inspected.stderr
    report = json.loads(inspected.stdout)
    assert report["sass"] == ["90"] and "libcudart.so.13" in report["needed"]
    assert b"release 13.0, V13.0.88" in library.read_bytes()


def test_a_wheel_built_with_another_13x_minor_verifies_and_imports(
    toolkits: Path, tmp_path: Path
) -> None:
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    project = tmp_path / "project"
    project.mkdir()
    (project / "cuship.toml").write_text(
        f'[project]\nname = "cuvecops"\nversion = "0.1.0"\nsource = "{EXAMPLE}"\n'
        f'[matrix]\npython = ["{python}"]\ncuda = ["12.8.1", "13.1.1"]\narch = "9.0"\n'
        '[build]\ntoolkits = "fetch"\nmanylinux = "2_28"\nisolation = false\n'
        'test_import = "cuvecops"\n'
    )
    out = tmp_path / "out"
    done = cuship("build", str(project), "-o", str(out), "--json", env=_host_free_env(toolkits))
    assert done.returncode == 0, done.stderr[-4000:]
    outcomes = {o["job"].rsplit("-", 1)[-1]: o for o in json.loads(done.stdout)}
    assert outcomes["cu128"]["status"] == "needs-runner"
    assert "PyPI has no CUDA 12 compiler" in outcomes["cu128"]["detail"]
    built = outcomes["cu131"]
    assert built["status"] == "built", built["detail"]
    assert str(built["smoke"]).startswith("cuvecops 0.1.0"), built["smoke"]  # imported
    wheel = Path(built["wheel"])
    assert "+cu131-" in wheel.name
    (extension,) = built["report"]["extensions"]
    assert extension["sass"] == ["90"]
    with zipfile.ZipFile(wheel) as archive:
        (member,) = [n for n in archive.namelist() if n.endswith(".so")]
        assert b"release 13.1, V13.1.115" in archive.read(member)
    log = (out / "logs" / f"{built['job']}.log").read_text()
    assert f"--cuda-home {toolkits}/13.1.1 " in log  # cuship's nvcc runs that toolkit's
    shutil.rmtree(toolkits / "13.1.1")  # 270 MB; the run's cache is temporary anyway
    assert Version(built["report"]["version"]).local == "cu131"
