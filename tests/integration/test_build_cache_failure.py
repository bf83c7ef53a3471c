"""A broken compiler cache does not fail a build: the job is built again without it, said.

The failure is the one seen in CI: an sccache server started with a ``TMPDIR`` that was later
deleted answers every compile with "failed to write temporary file", so CMake's first compiler
check fails. The server here is a real sccache on a port of its own (``SCCACHE_SERVER_PORT``),
poisoned that way; the project is a real scikit-build-core CMake project (C + CUDA).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.clirun import cuship
from tests.integration.tinycmake import tiny_cmake_project

SCCACHE = shutil.which("sccache")
pytestmark = pytest.mark.skipif(SCCACHE is None, reason="sccache comes with cuship[build]")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def poisoned(tmp_path: Path) -> Iterator[dict[str, str]]:
    """The environment of an sccache server whose temporary directory is gone."""
    assert SCCACHE is not None
    env = {
        **os.environ,
        "SCCACHE_SERVER_PORT": str(_free_port()),
        "SCCACHE_DIR": str(tmp_path / "sccache"),
    }
    gone = tmp_path / "gone"
    gone.mkdir()
    subprocess.run(
        [SCCACHE, "--start-server"], env={**env, "TMPDIR": str(gone)}, check=True, timeout=60
    )
    shutil.rmtree(gone)
    try:
        yield env
    finally:
        subprocess.run([SCCACHE, "--stop-server"], env=env, capture_output=True, timeout=60)


def test_a_broken_sccache_server_is_bypassed_and_said(
    tmp_path: Path, poisoned: dict[str, str]
) -> None:
    project = tiny_cmake_project(tmp_path, "tinycmake")
    (project / "cuship.toml").write_text(
        '[matrix]\npython = ["3.11"]\ncuda = ["13.0"]\narch = "9.0"\n'
        '[build]\nisolation = false\ncache = "sccache"\ntest_import = "tinycmake"\n'
    )
    done = cuship("build", str(project), "--json", base=poisoned, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (job,) = json.loads(done.stdout)
    assert job["status"] == "built", job["detail"]
    assert "the compiler cache failed (failed to execute compile" in done.stderr
    assert "failed to write temporary file" in done.stderr
    log = Path(str(job["wheel"])).parent / "logs" / "tinycmake-0.1.0-cp311-cu130.log"
    text = log.read_text()
    first, again = text.split("# cuship: sccache failed", 1)
    assert "CMAKE_C_COMPILER_LAUNCHER" in first, "the first attempt went through sccache"
    assert "COMPILER_LAUNCHER" not in again, "the second did not"
