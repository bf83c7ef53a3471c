"""`cuship build` on the bundled example with the host's real nvcc, auditwheel and pip."""

from __future__ import annotations

import json
import shutil
import zipfile
from functools import partial
from pathlib import Path

import pytest

from cuship.compat import load
from cuship.config import load_config
from cuship.machine import fingerprint
from cuship.matrix import expand
from tests.integration import clirun
from tests.integration.plainc import offline_from, plain_c_sdists
from tests.jsondocs import BUILD, schema_errors

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cuvecops"


cuship = partial(clirun.cuship, timeout=900)


def host_job_id() -> str:
    fp = fingerprint()
    assert fp.toolkit is not None and fp.toolkit.version, "CI needs nvcc"
    cuda = ".".join(fp.toolkit.version.split(".")[:2])
    python = ".".join(fp.python.split(".")[:2])
    jobs = expand(load_config(EXAMPLE), load()).jobs
    return next(
        j.id for j in jobs if j.python == python and f"{j.cuda.major}.{j.cuda.minor}" == cuda
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    out = tmp_path_factory.mktemp("wheelhouse")
    done = cuship("build", str(EXAMPLE), "--job", host_job_id(), "-o", str(out), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    document = json.loads(done.stdout)
    assert schema_errors(BUILD, document) == []
    (outcome,) = document
    return outcome  # type: ignore[no-any-return]


def test_build_makes_a_repaired_labelled_verified_wheel(built: dict[str, object]) -> None:
    assert built["status"] == "built"
    wheel = Path(str(built["wheel"]))
    report = built["report"]
    assert isinstance(report, dict)
    (ext,) = report["extensions"]
    assert set(ext["sass"]) == {"80", "90", "100", "120"}
    assert ext["ptx"] == ["80", "120"]
    assert report["bundled_cuda_libs"] == []
    assert "libcudart.so.13" in ext["needed"]
    assert wheel.name.startswith("cuvecops-0.1.0+cu130-")  # the example needs no torch
    assert wheel.stat().st_size < 200 * 1024, "no CUDA library may be bundled"
    with zipfile.ZipFile(wheel) as archive:
        assert not [n for n in archive.namelist() if "libcudart" in n]
    assert "cpu:" in str(built["smoke"]), (
        "the wheel imported in a fresh venv and fell back to the CPU"
    )


def test_verify_and_inspect_agree_with_the_build(built: dict[str, object]) -> None:
    wheel = str(built["wheel"])
    done = cuship("verify", wheel, "--arch", "8.0;9.0;10.0;12.0+PTX")
    assert done.returncode == 0, done.stdout + done.stderr
    done = cuship("verify", wheel, "--arch", "8.6;12.0+PTX")
    assert done.returncode == 1
    assert "86" in done.stdout + done.stderr


def test_unknown_job_lists_the_nearest() -> None:
    """A job ID from before the example dropped its torch axis."""
    done = cuship(
        "build", str(EXAMPLE), "--job", "cuvecops-0.1.0-cp311-cu130-torch2.9", "--dry-run"
    )
    assert done.returncode == 2
    assert "no job 'cuvecops-0.1.0-cp311-cu130-torch2.9'" in done.stderr
    assert "nearest: cuvecops-0.1.0-cp311-cu130," in done.stderr


def test_missing_nvcc_exits_3_with_how_to_get_one(tmp_path: Path) -> None:
    done = cuship("build", str(EXAMPLE), "-o", str(tmp_path), env={"CUSHIP_NVCC": "none"})
    assert done.returncode == 3, done.stderr
    assert "no nvcc found" in done.stderr and "CUDA toolkit" in done.stderr
    assert not list(tmp_path.iterdir()), "nothing written"


def test_compile_error_shows_the_compilers_message(tmp_path: Path) -> None:
    broken = tmp_path / "cuvecops"
    shutil.copytree(EXAMPLE, broken, ignore=shutil.ignore_patterns("build", "dist", "__pycache__"))
    ops = broken / "csrc" / "ops.cu"
    ops.write_text(ops.read_text() + "\nthis is not cuda;\n")
    done = cuship("build", str(broken), "--job", host_job_id(), "-o", str(tmp_path / "out"))
    assert done.returncode == 1
    assert "ops.cu" in done.stderr and "error" in done.stderr
    assert "Traceback" not in done.stderr


def test_packages_yml_builds_the_pypi_sdist_and_verify_judges_it(tmp_path: Path) -> None:
    """Community-index mode: name==version from its PyPI sdist, with the entry's test_import.
    The sdist holds no device code, which cuship finds out from its sources: though the matrix
    asks for CUDA, it is built as what it is, a +cpu wheel, verified to hold no device code."""
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "packages.yml").write_text(
        'packages:\n  six:\n    versions: ["1.16.0"]\n    build_args: ""\n    test_import: "six"\n'
        '    description: "a pure package: it builds, imports, and has no GPU code to verify"\n'
    )
    fp = fingerprint()
    assert fp.toolkit is not None and fp.toolkit.version
    cuda = ".".join(fp.toolkit.version.split(".")[:2])
    python = ".".join(fp.python.split(".")[:2])
    (tmp_path / "cuship.toml").write_text(
        f'[matrix]\npython = ["{python}"]\ncuda = ["{cuda}"]\narch = "9.0"\n'
    )
    done = cuship("build", str(tmp_path), "-o", str(tmp_path / "out"), "--json")
    (outcome,) = json.loads(done.stdout)
    assert outcome["job"].startswith("six-1.16.0-cp") and outcome["job"].endswith("-cpu")
    assert outcome["status"] == "built" and done.returncode == 0, done.stderr
    assert outcome["wheel"].endswith(".whl") and "+cpu" in outcome["wheel"]
    assert outcome["smoke"].startswith("six 1.16.0")
    log = next((tmp_path / "out" / "logs").glob("*.log")).read_text()
    assert "pip wheel" in log and "/six-1.16.0.tar.gz" in log  # the sdist read, hash-checked


def test_a_packages_yml_entry_without_device_code_ships_a_cpu_wheel(tmp_path: Path) -> None:
    """packages.yml's per-package matrix: a plain C package (device_code: false) is built as
    what it is, a +cpu wheel verified to hold no device code, never failed for lacking it."""

    dist = plain_c_sdists(tmp_path, "1.0")
    python = ".".join(fingerprint().python.split(".")[:2])
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "packages.yml").write_text(
        f'matrix:\n  python: ["{python}"]\n'
        "packages:\n  cplain:\n    versions: ['1.0']\n    test_import: cplain\n"
        '    build_args: "--no-build-isolation"\n'
        "    matrix: {device_code: false}\n"
    )
    env = offline_from(dist)
    done = cuship("build", str(tmp_path), "-o", str(tmp_path / "out"), "--json", env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert schema_errors(BUILD, json.loads(done.stdout)) == []
    (outcome,) = json.loads(done.stdout)
    assert outcome["job"] == f"cplain-1.0-cp{python.replace('.', '')}-cpu"
    assert outcome["status"] == "built", outcome
    wheel = Path(outcome["wheel"])
    assert wheel.name.startswith("cplain-1.0+cpu-cp"), wheel.name
    assert outcome["smoke"] and outcome["smoke"].startswith("cplain"), "it imported"
