"""External tools that hang, cannot run or answer nonsense end in a cuship error, not a traceback.

Each test runs a real stand-in for the tool (a script), so the failure is the operating system's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cuship.builder.host import tools as hosttools
from cuship.builder.model import Step
from cuship.builder.run.commands import BuildFailed, run_step
from cuship.errors import ToolMissing, UsageError
from cuship.resolve import install


def _script(path: Path, body: str) -> Path:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def test_a_build_step_that_is_not_executable_fails_the_build(tmp_path: Path) -> None:
    tool = tmp_path / "compile"
    tool.write_text("#!/bin/sh\n")  # no execute bit: PermissionError, not FileNotFoundError
    step = Step(name="compile", description="compile", argv=(str(tool),))
    with pytest.raises(BuildFailed, match=r"compile: cannot run .*: Permission denied") as raised:
        run_step(step, tmp_path / "log", {"PATH": "/usr/bin:/bin"})
    assert raised.value.hint is not None and "executable" in raised.value.hint


def test_a_build_step_in_a_missing_directory_fails_the_build(tmp_path: Path) -> None:
    step = Step(name="configure", description="c", argv=("true",), cwd=str(tmp_path / "gone"))
    with pytest.raises(BuildFailed, match="configure: cannot run 'true'") as raised:
        run_step(step, tmp_path / "log", {"PATH": "/usr/bin:/bin"})
    assert raised.value.hint is not None and "gone" in raised.value.hint


def test_a_hanging_sccache_is_tool_missing_before_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hosttools, "_SCCACHE_TIMEOUT", 0.5)
    sccache = _script(tmp_path / "sccache", "exec sleep 30")
    with pytest.raises(ToolMissing, match=r"--start-server' did not answer within 0.5 s") as raised:
        hosttools.sccache_stats(str(sccache), zero=True)
    assert raised.value.hint is not None and "--stop-server" in raised.value.hint
    assert hosttools.sccache_stats(str(sccache)) is None  # after a build: no stats, no failure


def test_an_sccache_that_cannot_run_is_tool_missing(tmp_path: Path) -> None:
    with pytest.raises(ToolMissing, match=r"cannot run .*sccache --start-server"):
        hosttools.sccache_stats(str(tmp_path / "sccache"), zero=True)
    assert hosttools.sccache_stats(str(tmp_path / "sccache")) is None


def test_sccache_stats_are_read(tmp_path: Path) -> None:
    stats = {
        "stats": {
            "compile_requests": 5,
            "cache_hits": {"counts": {"CUDA": 2, "C/C++": 1}},
            "cache_misses": {"counts": {"CUDA": 2}},
        }
    }
    answer = f"[ \"$1\" = --show-stats ] && echo '{json.dumps(stats)}'; exit 0"
    sccache = _script(tmp_path / "sccache", answer)
    assert hosttools.sccache_stats(str(sccache), zero=True) is None
    assert hosttools.sccache_stats(str(sccache)) == {
        "hits": 3,
        "misses": 2,
        "requests": 5,
        "part_hits": 0,
        "part_misses": 0,
    }


def test_a_hanging_python_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(install, "_PROBE_TIMEOUT", 0.5)
    python = _script(tmp_path / "python", "exec sleep 30")
    with pytest.raises(UsageError, match=r"did not report its tags within 0\.5 s") as raised:
        install.interpreter_target(str(python), {"PATH": "/usr/bin:/bin"})
    assert raised.value.hint is not None and "working Python" in raised.value.hint


@pytest.mark.parametrize("answer", ["not json", '{"version": "3.12"}', "[1, 2, 3]", '["3.12", 5]'])
def test_a_python_that_answers_nonsense_is_a_usage_error(tmp_path: Path, answer: str) -> None:
    python = _script(tmp_path / "python", f"echo '{answer}'")
    with pytest.raises(UsageError, match="answered the tag probe with") as raised:
        install.interpreter_target(str(python), {"PATH": "/usr/bin:/bin"})
    assert answer in str(raised.value)
