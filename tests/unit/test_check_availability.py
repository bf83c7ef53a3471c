"""An engine that cannot import is one line with its fix; the probe's worker-side import check."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cuship.check.case.engines import engine_imports
from cuship.check.run.availability import (
    Unavailable,
    import_problem,
    unavailable,
    unavailable_after_death,
)


def test_each_engine_names_the_modules_it_imports() -> None:
    assert engine_imports("native") == engine_imports("cuda") == ()
    assert engine_imports("triton-interpret") == ("torch", "triton", "triton.language")
    assert engine_imports("numba-sim") == engine_imports("numba") == ("numba", "numba.cuda")


def test_missing_torch_for_the_interpreter_says_install_the_cpu_build() -> None:
    problem = {
        "module": "torch",
        "missing": "torch",
        "error": "ModuleNotFoundError: No module named 'torch'",
    }
    found = unavailable("triton-interpret", problem)
    assert found.reason == (
        "engine triton-interpret unavailable: importing torch failed: "
        "ModuleNotFoundError: No module named 'torch'"
    )
    assert "pip install torch" in found.fix and "download.pytorch.org/whl/cpu" in found.fix
    assert "not in cuship[check]" in found.fix
    assert "\n" not in found.line()


def test_numba_broken_by_numpy_names_the_error_and_the_release_to_install() -> None:
    error = "ImportError: Numba needs NumPy 2.3 or less; got NumPy 2.5."
    found = unavailable("numba-sim", {"module": "numba.cuda", "missing": None, "error": error})
    assert found.error == f"importing numba.cuda failed: {error}"
    assert "numba-cuda" in found.fix and "NumPy" in found.fix
    missing = unavailable("numba-sim", {"module": "numba", "missing": "numba", "error": "x"})
    assert missing.fix.startswith("pip install 'numba>=0.60' 'numba-cuda>=0.10' ")
    assert Unavailable.from_json(found.to_json()) == found


def test_a_worker_death_while_importing_is_one_line() -> None:
    message = (
        "worker process killed by SIGSEGV while importing numba\nworker stderr:\nFatal Python error"
    )
    found = unavailable_after_death("numba-sim", ("numba", "numba.cuda"), message)
    assert (
        found.error == "worker process killed by SIGSEGV while importing numba (Fatal Python error)"
    )
    assert "import numba, numba.cuda" in found.fix


def test_import_problem_stops_at_the_first_module_that_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "avail_broken.py").write_text("raise ImportError('broken\\n  on purpose')\n")
    (tmp_path / "avail_fine.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("avail_broken", "avail_fine"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    assert import_problem(["avail_fine"]) is None
    assert import_problem(["avail_fine", "avail_broken", "avail_missing"]) == {
        "module": "avail_broken",
        "missing": None,
        "error": "ImportError: broken on purpose",
    }
    assert import_problem(["avail_missing_module"]) == {
        "module": "avail_missing_module",
        "missing": "avail_missing_module",
        "error": "ModuleNotFoundError: No module named 'avail_missing_module'",
    }


def test_the_install_lines_name_what_the_check_extra_brings() -> None:
    """A missing engine's fix installs the packages themselves (cuship may be on no index), at
    the versions cuship's [check] extra asks for."""
    import re

    import tomllib

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    extra = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]["check"]
    for module in ("triton", "numba", "numba_cuda"):
        fix = unavailable("x", {"module": module, "missing": module, "error": "e"}).fix
        named = re.findall(r"'([^']+)'", fix)
        assert named and set(named) <= set(extra), (fix, extra)
