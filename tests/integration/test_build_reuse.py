"""A rebuild reuses the job's CMake build directory and repair while their keys hold, and
builds afresh when a flag changes; a changed source recompiles in the kept directory.

The project is a real scikit-build-core CMake project with one CUDA file, built by real nvcc
without a compiler cache (so that what is reused is cuship's doing, not sccache's).
"""

from __future__ import annotations

import json
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

from cuship.machine import fingerprint
from cuship.wheel.audit import inspect_wheel
from tests.integration.clirun import cuship
from tests.integration.tinycmake import tiny_cmake_project

TOOLKIT = fingerprint().toolkit
pytestmark = pytest.mark.skipif(
    TOOLKIT is None or not TOOLKIT.version, reason="building CUDA needs nvcc"
)

PROBE = 'extern "C" __attribute__((visibility("default"))) int tinyreuse_probe() { return 7; }\n'
CONFIG = """[matrix]
python = ["{python}"]
cuda = ["{cuda}"]
arch = "{arch}"
[build]
isolation = false
test_import = "tinyreuse"
"""


def _project(root: Path) -> Path:
    assert TOOLKIT is not None and TOOLKIT.version
    project = tiny_cmake_project(root, "tinyreuse")
    _configure(project, "9.0")
    return project


def _configure(project: Path, arch: str) -> None:
    assert TOOLKIT is not None and TOOLKIT.version
    cuda = ".".join(TOOLKIT.version.split(".")[:2])
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    (project / "cuship.toml").write_text(CONFIG.format(python=python, cuda=cuda, arch=arch))


def _build(project: Path, out: Path, *more: str) -> tuple[Path, str]:
    """Build the one job: its wheel and the lines cuship wrote into its log."""
    done = cuship("build", str(project), "-o", str(out), "--json", *more, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    (job,) = json.loads(done.stdout)
    assert job["status"] == "built", job["detail"]
    (log,) = (out / "logs").glob("*.log")
    said = "\n".join(line for line in log.read_text().splitlines() if line.startswith("# "))
    return Path(str(job["wheel"])), said


def _record(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/RECORD"))
        return archive.read(name).decode()


def _library(wheel: Path) -> bytes:
    with zipfile.ZipFile(wheel) as archive:
        return archive.read(next(n for n in archive.namelist() if n.endswith(".so")))


def test_a_rebuild_reuses_what_its_keys_allow_and_no_more(tmp_path: Path) -> None:
    project, out = _project(tmp_path), tmp_path / "out"
    cold, said = _build(project, out)
    assert "build dir" in said and "new (no earlier build with a key)" in said
    assert "# repair: done" in said
    record = _record(cold)
    kept = shutil.copy(cold, tmp_path / cold.name)

    warm, said = _build(project, out, "--rebuild")
    assert "reused (the same key as its last build: configure kept)" in said
    assert "# repair: reused" in said
    assert _record(warm) == record, "the warm wheel holds the same files with the same hashes"
    assert warm.read_bytes() == Path(kept).read_bytes()

    _configure(project, "8.0")  # a changed flag: the arch list
    flagged, said = _build(project, out)
    assert "emptied, the key changed (job, steps, files)" in said
    assert "# repair: done" in said
    assert inspect_wheel(flagged).sass == ("80",)
    assert b"tinyreuse_probe" not in _library(flagged)

    source = project / "ext.cu"
    source.write_text(source.read_text() + PROBE)  # a changed source: ninja compiles it
    edited, said = _build(project, out)
    assert "reused (the same key as its last build: configure kept)" in said
    assert "# repair: done" in said
    assert b"tinyreuse_probe" in _library(edited)
