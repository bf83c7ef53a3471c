"""`cuship doctor` as a user runs it: the real CLI in a subprocess of a venv's interpreter, over a
CUDA package installed there by uv from a wheel around a shared object nvcc builds (SASS sm_80,
sm_90a, sm_100, PTX compute_120, linked to libcudart.so.13), on fake GPUs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cuship.docs.documents import schema_file
from tests.integration.cudawheel import build_so
from tests.integration.indexsite import clean_env
from tests.integration.venvs import make_venv
from tests.jsondocs import schema_errors
from tests.wheel_factory import make_wheel

TAG = f"cp{sys.version_info.major}{sys.version_info.minor}"
SO = "fakecuda/_C.abi3.so"


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv over this interpreter's packages (cuship's dependencies, torch) with fakecuda."""
    root = tmp_path_factory.mktemp("doctor")
    env = clean_env(root)
    wheel = make_wheel(
        root / "dist",
        "fakecuda",
        "1.0+cu130",
        tag=f"{TAG}-{TAG}-manylinux_2_17_x86_64",
        modules={"fakecuda/__init__": ""},
        files={SO: build_so(root).read_bytes()},
    )
    python = make_venv(root / "venv", system_site=True, env=env)
    for args in (
        ["uv", "pip", "install", "--python", str(python), "--no-deps", "--no-index", str(wheel)],
    ):
        done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{args}: {done.stdout}{done.stderr}"
    return python


def doctor(python: Path, *args: str, **machine: str) -> subprocess.CompletedProcess[str]:
    env = clean_env(python.parents[2], CUSHIP_TORCH="none", **machine)
    return subprocess.run(
        [str(python), "-m", "cuship", "doctor", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_a_gpu_without_a_kernel_image_fails_with_the_fix(venv: Path) -> None:
    gpus = "H100,A100,RTX 5090,V100"
    done = doctor(
        venv,
        "fakecuda",
        "--json",
        CUSHIP_GPUS=gpus,
        CUSHIP_DRIVER_CUDA="13.0",
        CUSHIP_CUDA_LIBS="13",
    )
    assert done.returncode == 1, done.stderr
    assert schema_errors(schema_file("doctor"), json.loads(done.stdout)) == []
    (package,) = json.loads(done.stdout)["packages"]
    assert package["location"].startswith(str(venv.parents[1]))
    assert (package["version"], package["provenance"]["variant"]) == ("1.0+cu130", "cu130")
    assert (package["objects"], package["sass"], package["ptx"]) == (
        [SO],
        ["80", "90a", "100"],
        ["120"],
    )
    assert [(g["gpu"], g["runs"], g["arches"]) for g in package["gpus"]] == [
        ("H100", "sass", ["sm_90a"]),
        ("A100", "sass", ["sm_80"]),
        ("RTX 5090", "ptx", ["compute_120"]),
        ("V100", "none", []),
    ]
    assert [
        {key: lib[key] for key in ("soname", "cuda_major", "runs")}
        for lib in package["cuda_libraries"]
    ] == [{"soname": "libcudart.so.13", "cuda_major": 13, "runs": True}]
    assert package["torch"]["abi"] == "none"
    (problem,) = package["problems"]
    assert problem["message"].startswith(f"V100 (7.0): {SO} carries no SASS or PTX it can run")
    assert "no kernel image is available" in problem["message"]
    assert problem["fix"].startswith('pip install --force-reinstall --no-deps "fakecuda==1.0"')


def test_text_report_over_the_whole_venv_and_a_clean_named_run(venv: Path) -> None:
    done = doctor(venv, CUSHIP_GPUS="A100", CUSHIP_DRIVER_CUDA="12.8")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert "fakecuda 1.0+cu130  variant cu130 (local version label)" in lines
    assert "  objects  1 shared object; SASS sm_80 sm_90a sm_100; PTX compute_120" in lines
    assert "  gpu      A100 (8.0): native (sm_80)" in lines
    assert any(
        line.startswith(
            "  PROBLEM  [cuda] needs libcudart.so.13 (CUDA 13); the driver runs CUDA 12.8"
        )
        for line in lines
    )
    assert "distributions with compiled code checked" in lines[-1]
    clean = doctor(venv, "fakecuda", CUSHIP_GPUS="A100", CUSHIP_DRIVER_CUDA="13.0")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert clean.stdout.splitlines()[-1].endswith(": no problem")
    missing = doctor(venv, "flash-attn", CUSHIP_GPUS="A100")
    assert missing.returncode == 2 and 'pip install "flash-attn"' in missing.stderr
