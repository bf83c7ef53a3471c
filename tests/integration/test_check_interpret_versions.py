"""The interpreter adaptation on other Triton x NumPy pairs than this interpreter's, each in a venv
of its own over this one: the unit tests of every construct, and the idiom kernels' quick check.

Opt-in, since each pair downloads Triton (about 200 MB): ``TEST_TRITON_PAIRS`` lists
``triton/numpy`` pairs (``3.5.1/1.26.4,3.5.1/2.4.6``) or ``all`` (:data:`PAIRS`, the CI matrix of
docs/kernel-checks.md); the venvs are kept under ``CUSHIP_TEST_CACHE`` (build/test-cache). The
pair this interpreter has is tested by tests/unit/test_check_interpret.py itself.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.integration import clirun
from tests.integration.venvs import make_venv

pytestmark = [pytest.mark.integration, pytest.mark.network]

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("CUSHIP_TEST_CACHE", REPO / "build" / "test-cache"))
# Triton 3.5 through 3.9 and NumPy 1.26 through 2.4 (2.5 is not on PyPI yet): the oldest and
# newest NumPy under the oldest Triton, and one pair for each newer Triton.
PAIRS = (
    ("3.5.1", "1.26.4"),
    ("3.5.1", "2.4.6"),
    ("3.6.0", "2.3.5"),
    ("3.7.1", "2.2.6"),
    ("3.8.0", "2.4.6"),
)
_VARIABLE = "TEST_TRITON_PAIRS"
UNIT = "tests/unit/test_check_interpret.py"
_QUICK = ("--quick", "--device", "cpu", "--no-store", "--parallel", "1")


def _asked() -> set[tuple[str, str]]:
    value = os.environ.get(_VARIABLE, "").strip()
    if value == "all":
        return set(PAIRS)
    asked = set()
    for item in filter(None, (v.strip() for v in value.split(","))):
        triton, _, numpy = item.partition("/")
        asked.add((triton, numpy))
    return asked


def _pairs() -> list[tuple[str, str]]:
    asked = _asked()
    return sorted(set(PAIRS) | asked)


def _venv(triton: str, numpy: str) -> Path:
    where = CACHE / f"triton-{triton}-numpy-{numpy}"
    python = where / "bin" / "python"
    if not (where / ".complete").exists():
        make_venv(where, pip=True, system_site=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", f"triton=={triton}", f"numpy=={numpy}"],
            check=True,
            capture_output=True,
            timeout=1800,
        )
        (where / ".complete").write_text("")
    return python


@pytest.mark.parametrize(("triton", "numpy"), _pairs(), ids=lambda v: str(v))
def test_every_construct_and_the_idioms_on_the_pair(triton: str, numpy: str) -> None:
    if (triton, numpy) not in _asked():
        pytest.skip(
            f"opt-in: Triton {triton} with NumPy {numpy} is downloaded into a venv (about "
            f"200 MB); set {_VARIABLE}={triton}/{numpy} (or all) to run it"
        )
    python = _venv(triton, numpy)
    env = {**os.environ, "PYTHONPATH": str(clirun.SRC)}
    probe = subprocess.run(
        [str(python), "-c", "import triton, numpy; print(triton.__version__, numpy.__version__)"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert probe.stdout.split() == [triton, numpy]
    unit = subprocess.run(
        [str(python), "-m", "pytest", "-p", "no:cacheprovider", "-q", "-p", "no:xdist", UNIT],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=900,
    )
    assert unit.returncode == 0, unit.stdout[-3000:]
    idioms = REPO / "tests" / "fixtures" / "idioms"
    check = subprocess.run(
        [str(python), "-m", "cuship", "check", str(idioms), *_QUICK],
        capture_output=True,
        text=True,
        env={k: v for k, v in env.items() if k not in ("CI", "GITHUB_ACTIONS")},
        timeout=900,
    )
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-2000:]
