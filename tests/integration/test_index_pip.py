"""Real pip and real uv install from an index cuship wrote, served by cuship on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from cuship.index import write
from cuship.serve.site import IndexServer
from tests.integration.venvs import make_venv
from tests.wheel_factory import make_wheel

PROJECT = "cuship-demo"
MODULE = "cuship_demo"
VERSIONS = ("1.0", "1.1+cu128torch2.8", "1.1+cu130torch2.9")


def _clean_env(tmp: Path) -> dict[str, str]:
    """The environment without the machine's pip/uv configuration (no mirrors, no find-links)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env.update(
        PIP_CONFIG_FILE=os.devnull,
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_NO_CACHE_DIR="1",
        UV_NO_CONFIG="1",
        UV_CACHE_DIR=str(tmp / "uv-cache"),
        UV_PYTHON_DOWNLOADS="never",
    )
    return env


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("index-pip")


@pytest.fixture(scope="module")
def site(workdir: Path) -> Path:
    wheels = workdir / "wheels"
    for version in VERSIONS:
        make_wheel(
            wheels,
            PROJECT,
            version,
            requires_python=">=3.8",
            modules={MODULE: f"VERSION = {version!r}\n"},
        )
    for version in ("1.0", "2.0"):
        make_wheel(wheels, "yank-me", version, modules={"yank_me": f"VERSION = {version!r}\n"})
    out = workdir / "site"
    write([wheels], out, yanked={"yank-me==2.0": "broken"})
    return out


@pytest.fixture(scope="module")
def venv(workdir: Path) -> Path:
    target = workdir / "venv"
    make_venv(target, pip=True)
    return target


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{args}\n{done.stdout}\n{done.stderr}"
    return done


def _installed(venv: Path, module: str) -> str:
    code = f"import {module}; print({module}.VERSION)"
    return subprocess.run(
        [str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def _pip(venv: Path, index: str, requirement: str, workdir: Path) -> str:
    args = [str(venv / "bin" / "python"), "-m", "pip", "install", "-v", "--force-reinstall"]
    return _run([*args, "--index-url", index, requirement], _clean_env(workdir)).stdout


def _uv(venv: Path, index: str, requirement: str, workdir: Path) -> None:
    args = ["uv", "pip", "install", "--reinstall", "--python", str(venv / "bin" / "python")]
    _run([*args, "--index-url", index, requirement], _clean_env(workdir))


def _gets(server: IndexServer, start: int) -> list[str]:
    return [r.path for r in server.requests[start:] if r.method == "GET"]


def test_pip_installs_by_pin_and_reads_metadata_first(
    server: IndexServer, venv: Path, workdir: Path
) -> None:
    start = len(server.requests)
    _pip(venv, f"{server.url}simple", f"{PROJECT}==1.0", workdir)
    assert _installed(venv, MODULE) == "1.0"
    gets = _gets(server, start)
    wheel = f"/files/{MODULE}-1.0-py3-none-any.whl"
    assert f"{wheel}.metadata" in gets, gets
    assert gets.index(f"{wheel}.metadata") < gets.index(wheel)
    json_pages = [r for r in server.requests[start:] if r.content_type and "json" in r.content_type]
    assert json_pages, "pip asked for the PEP 691 JSON page"


def test_pip_installs_a_local_label_by_exact_pin(
    server: IndexServer, venv: Path, workdir: Path
) -> None:
    _pip(venv, f"{server.url}simple", f"{PROJECT}==1.1+cu128torch2.8", workdir)
    assert _installed(venv, MODULE) == "1.1+cu128torch2.8"


def test_pip_takes_the_variant_from_a_sub_index(
    server: IndexServer, venv: Path, workdir: Path
) -> None:
    _pip(venv, f"{server.url}cu130torch2.9/simple", PROJECT, workdir)
    assert _installed(venv, MODULE) == "1.1+cu130torch2.9"


def test_pip_skips_a_yanked_release(server: IndexServer, venv: Path, workdir: Path) -> None:
    _pip(venv, f"{server.url}simple", "yank-me", workdir)
    assert _installed(venv, "yank_me") == "1.0"


@pytest.mark.parametrize(
    ("index", "requirement", "expected"),
    [
        ("simple", f"{PROJECT}==1.0", "1.0"),
        ("simple", f"{PROJECT}==1.1+cu128torch2.8", "1.1+cu128torch2.8"),
        ("cu128torch2.8/simple", PROJECT, "1.1+cu128torch2.8"),
        ("simple", "yank-me", "1.0"),
    ],
)
def test_uv_installs(
    server: IndexServer, workdir: Path, index: str, requirement: str, expected: str
) -> None:
    target = workdir / f"uv-venv-{abs(hash((index, requirement)))}"
    make_venv(target, env=_clean_env(workdir))
    start = len(server.requests)
    _uv(target, f"{server.url}{index}", requirement, workdir)
    module = "yank_me" if requirement.startswith("yank") else MODULE
    assert _installed(target, module) == expected
    assert any(p.endswith(".metadata") for p in _gets(server, start))


def _fetch(url: str, accept: str | None) -> tuple[int, str, bytes]:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers["Content-Type"], b""


def test_server_negotiates_pep_691(server: IndexServer) -> None:
    page = f"{server.url}simple/{PROJECT}/"
    status, kind, body = _fetch(page, "application/vnd.pypi.simple.v1+json")
    assert (status, kind) == (200, "application/vnd.pypi.simple.v1+json")
    assert json.loads(body)["name"] == PROJECT
    status, kind, body = _fetch(page, "application/vnd.pypi.simple.v1+json;q=0.5, text/html")
    assert (status, kind.split(";")[0]) == (200, "text/html")
    assert b"<a href=" in body
    assert _fetch(page, "application/json")[0] == 406
    status, kind, _ = _fetch(f"{server.url}simple/Cuship.Demo", None)
    assert status == 200  # redirected to the normalised name
    status, kind, _ = _fetch(f"{server.url}files/{MODULE}-1.0-py3-none-any.whl", None)
    assert (status, kind) == (200, "application/zip")


def test_serve_command_prints_its_url_first(site: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    args = [sys.executable, "-m", "cuship", "serve", str(site), "--port", "0"]
    with subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as proc:
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().decode().strip()
            assert url.startswith("http://127.0.0.1:") and not url.endswith(":0/")
            status, kind, _ = _fetch(f"{url}simple/", "application/vnd.pypi.simple.v1+json")
            assert (status, kind) == (200, "application/vnd.pypi.simple.v1+json")
        finally:
            proc.terminate()
            proc.wait(timeout=10)
