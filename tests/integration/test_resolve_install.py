"""`cuship resolve` and `cuship install` against `cuship serve` over real example wheels."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cuship.docs.documents import schema_file
from cuship.index import write
from cuship.index.describe import describe_wheel
from cuship.serve.site import IndexServer, serve
from tests.integration.clirun import cuship
from tests.integration.cudawheel import relabel_for_cuda
from tests.integration.indexsite import bad_server, clean_env
from tests.integration.venvs import make_venv
from tests.jsondocs import schema_errors
from tests.wheel_factory import make_wheel

# The example wheel is built by the interpreter running the tests.
_CP = f"cp{sys.version_info.major}{sys.version_info.minor}"
CU128 = f"cuvecops-0.1.0+cu128-{_CP}-{_CP}-linux_x86_64.whl"
CU130 = f"cuvecops-0.1.0+cu130-{_CP}-{_CP}-linux_x86_64.whl"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("resolve")


def _site(workdir: Path, example_wheel: Path, name: str) -> Path:
    wheels = workdir / f"{name}-wheels"
    for label in ("cu128", "cu130"):
        relabel_for_cuda(example_wheel, label, wheels)
    # cuvecops needs numpy>=1.26: a metadata-only stand-in lets a fresh venv resolve it from the
    # same loopback index (the tests read versions, they do not import numpy).
    make_wheel(wheels, "numpy", "2.3.0", modules={"_numpy_stand_in": ""})
    site = workdir / name
    write([wheels], site, describe=describe_wheel)
    return site


@pytest.fixture(scope="module")
def site(workdir: Path, example_wheel: Path) -> Path:
    return _site(workdir, example_wheel, "site")


def _resolve(server: IndexServer, workdir: Path, **env: str) -> tuple[int, dict[str, object]]:
    done = cuship(
        "resolve",
        "cuvecops",
        "--index",
        f"{server.url}simple",
        "--json",
        base=clean_env(workdir, **{"CUSHIP_TORCH": "none", "CUSHIP_CUDA_LIBS": "12,13", **env}),
    )
    doc = json.loads(done.stdout)
    assert schema_errors(schema_file("resolve"), doc) == []
    return done.returncode, doc


def _chosen(doc: dict[str, object]) -> str | None:
    chosen = doc["chosen"]
    return chosen["filename"] if isinstance(chosen, dict) else None


def _rejected(doc: dict[str, object]) -> dict[str, str]:
    rows = doc["rejected"]
    assert isinstance(rows, list)
    return {r["filename"]: f"{r['rule']}: {r['reason']}" for r in rows}


def test_resolve_follows_the_driver(server: IndexServer, workdir: Path) -> None:
    code, doc = _resolve(server, workdir, CUSHIP_GPUS="H100", CUSHIP_DRIVER_CUDA="12.8")
    assert code == 0 and _chosen(doc) == CU128
    assert _rejected(doc)[CU130].startswith("cuda: needs libcudart.so.13 (CUDA 13)")
    assert doc["manifest"] == f"{server.url}simple/cuvecops/cuship.json", "one project's manifest"
    code, doc = _resolve(
        server, workdir, CUSHIP_GPUS="H100", CUSHIP_CUDA_DRIVER_VERSION="580.65.06"
    )
    assert code == 0 and _chosen(doc) == CU130  # both run; the CUDA closest to the driver wins
    ranked = doc["ranked"]
    assert isinstance(ranked, list) and [r["filename"] for r in ranked] == [CU130, CU128]


@pytest.mark.parametrize("torch", ["none", "2.11.0", "2.13.0+cpu"])
def test_a_wheel_linking_no_torch_is_taken_whatever_torch_is_installed(
    server: IndexServer, workdir: Path, torch: str
) -> None:
    code, doc = _resolve(
        server, workdir, CUSHIP_GPUS="H100", CUSHIP_DRIVER_CUDA="13.0", CUSHIP_TORCH=torch
    )
    assert code == 0 and _chosen(doc) == CU130, doc


def test_resolve_explains_when_no_gpu_is_covered(server: IndexServer, workdir: Path) -> None:
    done = cuship(
        "resolve",
        "cuvecops",
        "--index",
        f"{server.url}simple",
        base=clean_env(
            workdir,
            CUSHIP_GPUS="T4",
            CUSHIP_DRIVER_CUDA="13.0",
            CUSHIP_TORCH="none",
            CUSHIP_CUDA_LIBS="12,13",
        ),
        columns=1000,
    )
    assert done.returncode == 1, done.stderr
    assert "no file of 'cuvecops' fits this machine: 2 rejected (gpu)" in done.stderr
    assert "T4 (7.5): " in done.stdout and "carries no SASS or PTX it can run" in done.stdout
    assert "sm_80" in done.stdout and "compute_120" in done.stdout


def test_resolve_without_gpu_takes_the_wheel_and_says_it_cannot_run(
    server: IndexServer, workdir: Path
) -> None:
    code, doc = _resolve(server, workdir, CUSHIP_GPUS="none")
    chosen = doc["chosen"]
    assert code == 0 and isinstance(chosen, dict)
    assert chosen["coverage"] == "no-gpu"
    assert any("cannot run" in n for n in chosen["notes"])


def _venv(path: Path, installer: str, env: dict[str, str]) -> Path:
    return make_venv(path, pip=installer != "uv", env=env)


def _version(python: Path, name: str) -> str:
    code = f"import importlib.metadata as m; print(m.version({name!r}))"
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=False)
    return done.stdout.strip() or done.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("installer", "driver_cuda", "expected"),
    [("pip", "12.8", "0.1.0+cu128"), ("uv", "13.0", "0.1.0+cu130")],
)
def test_install_takes_exactly_the_chosen_file(
    server: IndexServer, workdir: Path, installer: str, driver_cuda: str, expected: str
) -> None:
    env = clean_env(
        workdir,
        CUSHIP_GPUS="H100",
        CUSHIP_DRIVER_CUDA=driver_cuda,
        CUSHIP_TORCH="none",
        CUSHIP_CUDA_LIBS="12,13",
    )
    python = _venv(workdir / f"venv-{installer}", installer, env)
    index = f"{server.url}simple"
    common = ["--index", index, "--installer", installer, "--python", str(python)]
    dry = cuship("install", "cuvecops", *common, "--dry-run", base=env)
    assert dry.returncode == 0, dry.stderr
    command = dry.stdout.strip().splitlines()[-1]
    assert "#sha256=" in command and "--index-url" in command and index in command
    assert "PackageNotFoundError" in _version(python, "cuvecops")  # dry run: nothing
    done = cuship("install", "cuvecops", *common, base=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (_version(python, "cuvecops"), _version(python, "numpy")) == (expected, "2.3.0")


def test_install_refuses_a_tampered_file(workdir: Path, example_wheel: Path) -> None:
    site = _site(workdir, example_wheel, "tampered")
    wheel = site / "files" / CU128
    wheel.unlink()  # break the hard link first: the original stays intact
    data = (workdir / "tampered-wheels" / CU128).read_bytes()
    wheel.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))  # the declared size: the hash says
    env = clean_env(
        workdir,
        CUSHIP_GPUS="H100",
        CUSHIP_DRIVER_CUDA="12.8",
        CUSHIP_TORCH="none",
        CUSHIP_CUDA_LIBS="12,13",
    )
    downloads = workdir / "tampered-downloads"
    python = _venv(workdir / "venv-tampered", "uv", env)
    with serve(site, "127.0.0.1", 0) as running:
        index = f"{running.url}simple"
        args = ["--installer", "uv", "--python", str(python), "--download-dir", str(downloads)]
        done = cuship("install", "cuvecops", "--index", index, *args, base=env)
    assert done.returncode == 1, done.stderr
    assert "sha256 mismatch for 'cuvecops-0.1.0+cu128" in done.stderr
    assert list(downloads.iterdir()) == []
    assert "PackageNotFoundError" in _version(python, "cuvecops")


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("404", "the index answered 404 Not Found for"),
        ("500", "the index answered 500 (2 tries)"),
        ("garbage", "the index answered garbage for"),
        ("stall", "no answer within 0.5 s (2 tries)"),
    ],
)
def test_a_bad_index_is_exit_2_naming_the_url(workdir: Path, mode: str, said: str) -> None:
    with bad_server(mode) as (url, hits):
        started = time.monotonic()
        done = cuship(
            "resolve",
            "cuvecops",
            "--index",
            url,
            "--timeout",
            "0.5",
            "--retries",
            "1",
            base=clean_env(workdir, CUSHIP_GPUS="none"),
        )
        took = time.monotonic() - started
    assert done.returncode == 2, done.stdout + done.stderr
    assert said in done.stderr
    assert f"{url}/cuvecops/" in done.stderr
    assert len(hits) == (2 if mode in ("500", "stall") else 1)
    assert took < 30, f"{mode} took {took:.1f} s"
