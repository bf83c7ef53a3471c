"""What cuship knows of an installed distribution: shadowing source dirs, imports, requirements."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import packaging
import pytest

from cuship.errors import CheckFailed, ToolMissing
from cuship.gpurun.origins import record
from cuship.provenance.installed import (
    InstalledDist,
    check_imported,
    find_installed,
    imported_problems,
    missing_requirements,
    without_shadowing,
)


def _dist(tmp_path: Path) -> InstalledDist:
    site = tmp_path / "site"
    (site / "tiny").mkdir(parents=True)
    init = site / "tiny" / "__init__.py"
    init.write_text("")
    return InstalledDist(
        name="tiny",
        version="1.0",
        location=site,
        top_level=("tiny",),
        files=frozenset({init.resolve()}),
    )


def test_source_dirs_holding_the_package_are_left_off(tmp_path: Path) -> None:
    dist = _dist(tmp_path)
    src, flat, checks = tmp_path / "src", tmp_path / "flat", tmp_path / "checks"
    (src / "tiny").mkdir(parents=True)
    flat.mkdir()
    (flat / "tiny.py").write_text("")
    checks.mkdir()
    assert without_shadowing((tmp_path, src, flat, checks), dist) == (tmp_path, checks)


def test_a_module_imported_from_the_source_tree_is_named(tmp_path: Path) -> None:
    dist = _dist(tmp_path)
    installed = SimpleNamespace(__file__=str(tmp_path / "site" / "tiny" / "__init__.py"))
    source = SimpleNamespace(__file__=str(tmp_path / "src" / "tiny" / "__init__.py"))
    assert imported_problems(dist, {"tiny": installed}) == ()
    assert imported_problems(dist, {}) == ()  # never imported: nothing to say here
    (problem,) = imported_problems(dist, {"tiny": source})
    assert problem.startswith(f"'tiny' was imported from '{tmp_path}/src/tiny/__init__.py'")
    with pytest.raises(CheckFailed, match="shadows the wheel under test"):
        check_imported(dist, {"tiny": source})


def test_missing_requirements_ignore_extras_and_other_platforms() -> None:
    requires = [
        "numpy>=1.26",
        "torch>=2.8",
        "scipy; extra == 'bench'",
        "pywin32; sys_platform == 'win32'",
        "Typing_Extensions",
    ]
    have = {"numpy": "1.24.0", "torch": "2.8.0+cu128", "typing-extensions": "4.12"}
    assert missing_requirements(requires, have) == ("numpy>=1.26: 1.24.0 installed",)
    assert missing_requirements(["cupy-cuda13x"], have) == ("cupy-cuda13x: not installed",)


def test_find_installed_reads_this_interpreter() -> None:
    dist = find_installed("packaging")
    assert dist.top_level == ("packaging",) and dist.owns(packaging.__file__ or "")
    with pytest.raises(ToolMissing, match="'no-such-dist-xyz' is not installed") as err:
        find_installed("no-such-dist-xyz")
    assert err.value.exit_code == 3


def test_the_pytest_plugin_records_where_each_module_came_from() -> None:
    line = record("packaging", dict(sys.modules))
    assert line["modules"] == [
        {"module": "packaging", "file": packaging.__file__, "installed": True}
    ]
    assert "not installed" in record("no-such-dist-xyz", {})["error"]
