"""--sanitize's tools, where compute-sanitizer is found, the command lines a sanitized pass starts
workers with, and which groups it runs."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from cuship.check.declare.inputs import CaseSpec
from cuship.check.run.lanes import PlannedGroup
from cuship.check.run.workers import WorkerSetup, worker_argv
from cuship.check.sanitize.run import sanitized_groups
from cuship.check.sanitize.tools import (
    TOOLS,
    find_sanitizer,
    parse_tools,
    sanitizer_command,
    search_dirs,
)
from cuship.errors import ToolMissing, UsageError


@pytest.mark.parametrize(
    ("text", "tools"),
    [
        ("memcheck", ("memcheck",)),
        ("racecheck, MEMCHECK,racecheck", ("racecheck", "memcheck")),
        ("all", ("memcheck", "racecheck", "initcheck", "synccheck")),
        ("initcheck,all", ("initcheck", "memcheck", "racecheck", "synccheck")),
    ],
)
def test_tools(text: str, tools: tuple[str, ...]) -> None:
    assert parse_tools(text) == tools


@pytest.mark.parametrize(("text", "problem"), [("leakcheck", "no tool named 'leakcheck'"), (",", "names no tool")])  # fmt: skip
def test_bad_tools_are_usage_errors(text: str, problem: str) -> None:
    with pytest.raises(UsageError, match=problem) as err:
        parse_tools(text)
    assert err.value.exit_code == 2 and "memcheck, racecheck, initcheck, synccheck" in str(
        err.value
    )


def _tool(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "compute-sanitizer"
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_cuda_home_comes_before_path(tmp_path: Path) -> None:
    on_path, home = _tool(tmp_path / "bin"), tmp_path / "cuda"
    _tool(home / "bin")
    environ = {"PATH": f"{on_path.parent}{os.pathsep}/usr/bin", "CUDA_HOME": str(home)}
    assert find_sanitizer(environ) == str(home / "bin" / "compute-sanitizer")
    assert find_sanitizer({"PATH": str(on_path.parent)}) == str(on_path)
    assert search_dirs(environ) == (
        f"{home}/bin", str(on_path.parent), "/usr/bin", "/usr/local/cuda/bin"
    )  # fmt: skip


@pytest.mark.skipif(
    Path("/usr/local/cuda/bin/compute-sanitizer").exists(), reason="the fallback has one here"
)
def test_missing_names_where_it_looked_and_the_fix(tmp_path: Path) -> None:
    environ = {"PATH": str(tmp_path), "CUDA_PATH": str(tmp_path / "cuda")}
    with pytest.raises(ToolMissing) as err:
        find_sanitizer(environ)
    text = str(err.value)
    assert err.value.exit_code == 3
    assert "--sanitize needs compute-sanitizer, which is not in $CUDA_HOME/bin, on PATH" in text
    assert f"looked in {tmp_path}/cuda/bin, {tmp_path}, /usr/local/cuda/bin" in text
    assert "install the CUDA toolkit" in text and "CUSHIP_COMPUTE_SANITIZER" in text


def test_the_override_names_it_or_says_there_is_none(tmp_path: Path) -> None:
    tool = _tool(tmp_path / "x")
    assert find_sanitizer({"CUSHIP_COMPUTE_SANITIZER": str(tool), "PATH": ""}) == str(tool)
    with pytest.raises(ToolMissing, match="CUSHIP_COMPUTE_SANITIZER='none' says there is none"):
        find_sanitizer({"CUSHIP_COMPUTE_SANITIZER": "none", "PATH": str(tool.parent)})
    with pytest.raises(ToolMissing, match="is not an executable file"):
        find_sanitizer({"CUSHIP_COMPUTE_SANITIZER": str(tmp_path / "nothing")})


@pytest.mark.parametrize("tool", list(TOOLS))
def test_the_worker_command_under_each_tool(tool: str) -> None:
    log = Path("/tmp/cuship-sanitize-x/t.log")
    prefix = sanitizer_command("/cuda/bin/compute-sanitizer", tool, log)
    setup = WorkerSetup(
        modules=("checks.py",), root=Path("/p"), pythonpath=(), env={}, prefix=prefix
    )
    argv = worker_argv(setup)
    assert argv[:-1] == [
        "/cuda/bin/compute-sanitizer", "--tool", tool, "--print-limit", "200",
        "--log-file", str(log), sys.executable, "-c",
    ]  # fmt: skip
    assert "from cuship.check.run import _worker" in argv[-1]
    plain = WorkerSetup(modules=(), root=Path("/p"), pythonpath=(), env={})
    assert worker_argv(plain)[:2] == [sys.executable, "-c"]


def test_a_sanitized_worker_is_told_where_to_mark() -> None:
    setup = WorkerSetup(modules=("c.py",), root=Path("/p"), pythonpath=(), env={})
    assert "marks" not in setup.hello()
    marked = WorkerSetup(modules=("c.py",), root=Path("/p"), pythonpath=(), env={}, marks=("/f", "w2"))  # fmt: skip
    assert marked.hello()["marks"] == ["/f", "w2"]


def _group(engine: str, skip: str | None = None) -> PlannedGroup:
    case = CaseSpec(index=0, sizes=(("n", 7),), distribution="normal", seed=1)
    return PlannedGroup(
        op="add",
        engine=engine,
        dtype="float32",
        rtol=0.0,
        atol=0.0,
        cases=(case,),
        skip_reason=skip,
    )


def test_only_the_gpu_engines_are_sanitized() -> None:
    groups = [
        _group("native"),
        _group("cuda"),
        _group("triton"),
        _group("numba", skip="engine numba unavailable: ..."),
        _group("numba-sim"),
    ]
    assert [g.engine for g in sanitized_groups(groups)] == ["cuda", "triton"]


def test_the_tools_run_side_by_side_up_to_one_per_core() -> None:
    from cuship.check.sanitize.run import default_jobs

    assert [default_jobs(4, cores) for cores in (1, 2, 16)] == [1, 2, 4]
    assert default_jobs(1, 16) == 1 and default_jobs(0, 16) == 1
