"""The torch-check step as a job runs it: ``python -m cuship.builder.run.torchcheck`` over a build
venv's site-packages, reading torch's files (never importing it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"


def _site(tmp_path: Path, version: str, version_py: str) -> Path:
    """A site-packages holding a torch distribution of ``version`` whose version.py is given."""
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "version.py").write_text(version_py, encoding="utf-8")
    info = site / f"torch-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n", encoding="utf-8"
    )
    return site


def _check(site: Path, version: str, variant: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cuship.builder.run.torchcheck", str(site), version, variant],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("installed", "version_py", "ok"),
    [
        ("2.13.0", "__version__ = '2.13.0'\ncuda = '13.0'\nhip = None\n", True),
        ("2.13.0+cpu", "__version__ = '2.13.0+cpu'\ncuda = None\nhip = None\n", False),
        ("2.13.0", "__version__ = '2.13.0'\ncuda = '12.8'\nhip = None\n", False),
        ("2.12.1", "__version__ = '2.12.1'\ncuda = '13.0'\nhip = None\n", False),
    ],
)
def test_the_build_venv_must_hold_the_job_s_torch_build(
    tmp_path: Path, installed: str, version_py: str, ok: bool
) -> None:
    done = _check(_site(tmp_path, installed, version_py), "2.13.0", "cu130")
    assert (done.returncode == 0) is ok, done.stderr
    if not ok:
        assert "the job needs torch 2.13.0 (cu130)" in done.stderr
        assert f"has torch {installed}" in done.stderr
        assert "Traceback" not in done.stderr


def test_a_venv_without_torch_is_said_plainly(tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    done = _check(tmp_path / "site", "2.13.0", "cu130")
    assert done.returncode == 1 and "its build environment has no torch" in done.stderr
