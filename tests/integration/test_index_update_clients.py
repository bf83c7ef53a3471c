"""An index updated in place, as three clients read it: real pip and uv installing from
`cuship serve` on loopback, and pypi-simple parsing the JSON and HTML project pages.

The site is written and updated by the `cuship index` command: a release, then a later
release added with --keep-existing, then that release yanked (no wheel given).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from pypi_simple import ACCEPT_HTML_ONLY, ACCEPT_JSON_ONLY, PyPISimple

from cuship.docs.documents import schema_file
from cuship.serve.site import IndexServer
from tests.integration.clirun import cuship
from tests.integration.indexsite import clean_env
from tests.integration.venvs import make_venv
from tests.jsondocs import schema_errors
from tests.wheel_factory import make_wheel

PROJECT = "cuship-update-demo"
MODULE = "cuship_update_demo"


def _wheel(directory: Path, version: str) -> Path:
    return make_wheel(directory, PROJECT, version, modules={MODULE: f"VERSION = {version!r}\n"})


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("index-update")


@pytest.fixture(scope="module")
def site(workdir: Path) -> Path:
    out = workdir / "site"
    first = [_wheel(workdir / "r1", "1.0"), make_wheel(workdir / "r1", "other-pkg", "0.1")]
    cuship("index", *first, "-o", out, check=True)
    return out


@pytest.fixture(scope="module")
def venv(workdir: Path) -> Path:
    target = workdir / "venv"
    make_venv(target, pip=True)
    return target


def _install(tool: str, venv: Path, index: str, workdir: Path) -> str:
    python = str(venv / "bin" / "python")
    if tool == "pip":
        args = [python, "-m", "pip", "install", "--force-reinstall", "--index-url", index]
    else:
        args = ["uv", "pip", "install", "--reinstall", "--python", python, "--index-url", index]
    done = subprocess.run(
        [*args, PROJECT], env=clean_env(workdir), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{args}\n{done.stdout}\n{done.stderr}"
    code = f"import {MODULE}; print({MODULE}.VERSION)"
    return subprocess.run(
        [python, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def _pypi_simple(server: IndexServer, accept: str) -> dict[str, tuple[bool, str | None]]:
    with PyPISimple(f"{server.url}simple/", accept=accept) as client:
        page = client.get_project_page(PROJECT)
    return {p.filename: (p.is_yanked, p.yanked_reason) for p in page.packages}


def test_clients_follow_each_update(
    site: Path, server: IndexServer, workdir: Path, venv: Path
) -> None:
    index = f"{server.url}simple/"
    for tool in ("pip", "uv"):
        assert _install(tool, venv, index, workdir) == "1.0"

    later = _wheel(workdir / "r2", "2.0")
    added = cuship("index", later, "--keep-existing", "-o", site, "--json", check=True)
    summary = json.loads(added.stdout)
    assert schema_errors(schema_file("index"), summary) == []
    assert (summary["wheels"], summary["rewritten"], summary["kept"]) == (3, 1, 2)
    for tool in ("pip", "uv"):
        assert _install(tool, venv, index, workdir) == "2.0"
    for accept in (ACCEPT_JSON_ONLY, ACCEPT_HTML_ONLY):
        files = _pypi_simple(server, accept)
        assert files == {
            f"{MODULE}-1.0-py3-none-any.whl": (False, None),
            later.name: (False, None),
        }, accept

    cuship(
        "index", "--keep-existing", "--yank", f"{later.name}:broken build", "-o", site, check=True
    )
    for tool in ("pip", "uv"):
        assert _install(tool, venv, index, workdir) == "1.0", f"{tool} took the yanked release"
    for accept in (ACCEPT_JSON_ONLY, ACCEPT_HTML_ONLY):
        assert _pypi_simple(server, accept)[later.name] == (True, "broken build"), accept
    other = json.loads((site / "simple" / "other-pkg" / "cuship.json").read_bytes())
    assert [w["filename"] for w in other["wheels"]] == ["other_pkg-0.1-py3-none-any.whl"]
