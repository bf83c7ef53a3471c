"""The judge on three real CUDA wheels from PyPI whose needs the loader, not DT_NEEDED, tells
(about 52 MB): ctranslate2 4.8.5 (no CUDA DT_NEEDED: it opens libcublas.so.12 with dlopen; a
CUDA 12.8 runtime linked statically, PTX ISA 8.7), jax-cuda13-plugin 0.10.2 (finds its CUDA
libraries through DT_RPATH $ORIGIN/../nvidia/cu13/lib; PTX ISA 9.0) and torchaudio 2.11.1
(libtorchaudio.so, whose name starts like torch's: SASS sm_75..sm_120, PTX ISA 9.2).

- what inspect reads from each (every object listed, what it opens, RPATH, the ISA version);
- resolve over an index of them on machines faked with CUSHIP_* variables: each CUDA need
  read from the binary held to the driver and the libraries there;
- doctor in a venv over this interpreter's torch against a real ``dlopen(RTLD_NOW)`` of each
  object: the same objects load.

Skipped, saying so, only when PyPI cannot be reached.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from cuship.wheel.audit import inspect_wheel
from tests.integration import clirun
from tests.integration.indexsite import clean_env, first_rule, indexed, resolved
from tests.integration.venvs import make_venv

PYPI = "https://pypi.org/simple/"
WHEELS = ("ctranslate2==4.8.5", "jax-cuda13-plugin==0.10.2", "torchaudio==2.11.1")
TAG = f"{sys.version_info.major}.{sys.version_info.minor}"

pytestmark = pytest.mark.network


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    try:
        with urllib.request.urlopen(f"{PYPI}ctranslate2/", timeout=20):
            pass
    except (urllib.error.URLError, OSError) as err:
        pytest.skip(f"PyPI ({PYPI}) cannot be reached ({err}); no real wheel to judge")
    folder = tmp_path_factory.mktemp("loader-wheels")
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_FIND_LINKS": ""}
    args = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    args += ["--python-version", TAG, "--index-url", PYPI, "-d", str(folder), *WHEELS]
    for platform in ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64"):
        args += ["--platform", platform]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return {path.name.split("-", 1)[0]: path for path in folder.glob("*.whl")}


def test_inspect_reads_what_the_loader_will_need(wheels: dict[str, Path]) -> None:
    ct2 = {
        x.path.rsplit("/", 1)[-1].split("-")[0]: x
        for x in inspect_wheel(wheels["ctranslate2"]).extensions
    }
    lib = ct2["libctranslate2"]
    assert lib.runtime is not None and lib.runtime.opens is not None
    assert "libcublas.so.12" in lib.runtime.opens and lib.runtime.static_runtime
    assert not any(n.startswith("libcudart") for n in lib.needed) and lib.ptx_isa == ("8.7",)
    jax = inspect_wheel(wheels["jax_cuda13_plugin"])
    linalg = next(x for x in jax.extensions if x.path.endswith("_linalg.so"))
    assert "$ORIGIN/../nvidia/cu13/lib" in linalg.rpath and linalg.ptx_isa == ("9.0",)
    audio = inspect_wheel(wheels["torchaudio"])
    (own,) = [x for x in audio.extensions if x.path == "torchaudio/lib/libtorchaudio.so"]
    assert own.role == "library" and own.sass[0] == "75" and own.sass[-1] == "120"
    assert own.ptx_isa == ("9.2",) and audio.bundled_cuda_libs == ()


def test_resolve_holds_what_the_binaries_need_to_the_machine(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    index = indexed(wheels.values(), tmp_path / "site")
    a100 = {
        "CUSHIP_GPUS": "A100",
        "CUSHIP_CUDA_DRIVER_VERSION": "580.65.06",
        "CUSHIP_TORCH": "none",
        "CUSHIP_CUDA_LIBS": "13",
    }

    def resolve(project: str, **changes: str) -> dict[str, object]:
        return resolved(project, index, {**a100, **changes})

    only13 = resolve("ctranslate2")
    assert first_rule(only13) == "libraries"  # it opens libcublas.so.12; only CUDA 13 is here
    assert "libcublas.so.12" in json.dumps(only13)
    assert first_rule(resolve("ctranslate2", CUSHIP_CUDA_LIBS="12")) == "ok"
    old = resolve("ctranslate2", CUSHIP_CUDA_LIBS="12", CUSHIP_CUDA_DRIVER_VERSION="470.256.02")
    assert first_rule(old) == "cuda"  # its static CUDA 12.8 runtime on a CUDA 11.4 driver
    assert first_rule(resolve("jax-cuda13-plugin")) == "ok"
    bare = resolve("jax-cuda13-plugin", CUSHIP_CUDA_LIBS="none")
    assert first_rule(bare) == "libraries"  # nvidia/cu13/lib: nothing there, nothing brought
    assert "jax-cuda13-plugin[with-cuda]" in json.dumps(bare)
    assert first_rule(resolve("jax-cuda13-plugin[with-cuda]", CUSHIP_CUDA_LIBS="none")) == "ok"
    assert (
        first_rule(resolve("jax-cuda13-plugin", CUSHIP_CUDA_DRIVER_VERSION="575.57.08")) == "cuda"
    )
    cpu = resolve("torchaudio", CUSHIP_TORCH="2.13.0+cpu")
    assert first_rule(cpu) == "torch"  # it links libc10_cuda: a CUDA build of torch


_LOAD = """
import ctypes, json, sys
try:
    import torch
except ImportError:
    pass
out = {}
for path in sys.argv[2:]:
    try:
        ctypes.CDLL(sys.argv[1] + "/" + path)
        out[path] = True
    except OSError as err:
        out[path] = False
print(json.dumps(out))
"""


@pytest.mark.parametrize("name", ["ctranslate2", "jax_cuda13_plugin", "torchaudio"])
def test_doctor_loads_what_dlopen_loads(wheels: dict[str, Path], tmp_path: Path, name: str) -> None:
    env = clean_env(tmp_path)
    python = make_venv(tmp_path / "venv", system_site=True, env=env)
    args = [
        "uv",
        "pip",
        "install",
        "--python",
        str(python),
        "--no-deps",
        "--no-index",
        str(wheels[name]),
    ]
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    run_env = {**env, "PYTHONPATH": str(clirun.SRC), "CUSHIP_GPUS": "H100",
               "CUSHIP_CUDA_DRIVER_VERSION": "580.65.06"}  # fmt: skip
    dist = name.replace("_", "-")
    doctor = subprocess.run(
        [str(python), "-m", "cuship", "doctor", dist, "--json"],
        cwd=tmp_path,
        env=run_env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    (package,) = json.loads(doctor.stdout)["packages"]
    loads = {x["path"]: x["loads"] for x in package["loads"] if x["loads"] is not None}
    assert loads, package
    site = package["location"]
    real = subprocess.run(
        [str(python), "-c", _LOAD, site, *loads],
        cwd=tmp_path,
        env=run_env, capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    assert loads == json.loads(real.stdout)
