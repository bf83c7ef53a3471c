"""A job built from a project's source tree is not built again while the tree, the commands and
the toolchain stay the same: `cuship ship` after `cuship build` reuses what the build made; an
edit to a source file builds again, what builds write into the tree does not."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from cuship.builder.host.interpreters import Interpreter, Interpreters
from cuship.builder.model import BuildPlan, Host
from cuship.builder.plan import plan_job
from cuship.builder.run import batch
from cuship.builder.run.execute import JobResult
from cuship.builder.run.smoke import Smoke
from cuship.builder.uptodate import tree_state
from cuship.compat import load
from cuship.config import load_config
from cuship.matrix import jobs_with_configs
from cuship.wheel.audit import inspect_wheel
from tests.wheel_factory import make_wheel

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cuvecops"
RUNNING = Interpreter(
    version="3.11", full="3.11.7", executable="/usr/bin/python3", source="running"
)


def _project(tmp_path: Path) -> Path:
    tree = tmp_path / "cuvecops"
    shutil.copytree(EXAMPLE, tree, ignore=shutil.ignore_patterns("dist", "build", "__pycache__"))
    return tree


def _plan(tree: Path) -> BuildPlan:
    host = Host(
        python="3.11", python_exe="/usr/bin/python3", nvcc="/usr/local/cuda/bin/nvcc",
        cuda="13.0.88", cpus=2, memory_available_gib=8.0,
        interpreters=Interpreters(found={"3.11": RUNNING}, looked=("the running interpreter",)),
    )  # fmt: skip
    (cfg, job), *_ = [
        (cfg, job)
        for cfg, job in jobs_with_configs(load_config(tree), load())
        if job.python == "3.11" and job.cuda.major == 13
    ]
    return plan_job(job, cfg, host, mode="local", out_dir=tree / "dist" / "cuship" / "wheels")


class _Builder:
    """Stands for run_plan: writes a wheel named after the job, counts its builds."""

    def __init__(self) -> None:
        self.built = 0

    def __call__(self, plan: BuildPlan, **_: Any) -> JobResult:
        self.built += 1
        wheel = make_wheel(
            plan.out_dir, "cuvecops", f"0.1.0+{plan.job.label}", tag="cp311-cp311-linux_x86_64"
        )
        return JobResult(
            job_id=plan.job.id, wheel=wheel, report=inspect_wheel(wheel), verify_problems=(),
            smoke=Smoke(said="cuvecops 0.1.0 cpu", env="isolated"), seconds=1.0,
        )  # fmt: skip


def test_an_unchanged_tree_reuses_its_wheel_and_an_edit_builds_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _project(tmp_path)
    plan = _plan(tree)
    assert plan.tree == tree and plan.inputs is not None
    builder = _Builder()
    monkeypatch.setattr(batch, "run_plan", builder)
    (first,) = batch.build_all([plan])
    assert builder.built == 1 and first.status == "built"
    (again,) = batch.build_all([_plan(tree)])  # a second command, planned anew (ship)
    assert builder.built == 1 and again.status == "built" and "up to date" in again.detail
    assert again.result is not None and again.result.wheel == first.result.wheel  # type: ignore[union-attr]
    smoke = again.result.smoke
    assert (
        smoke is not None
        and smoke.said == "cuvecops 0.1.0 cpu"
        and smoke.note == "when it was built"
    )
    source = tree / "csrc" / "ops.cu"
    source.write_text(source.read_text() + "\n// an edit\n")
    batch.build_all([_plan(tree)])
    assert builder.built == 2, "an edited source builds again"
    batch.build_all([_plan(tree)], rebuild=True)
    assert builder.built == 3, "--rebuild builds anyway"


def test_what_builds_write_into_the_tree_leaves_its_state_alone(tmp_path: Path) -> None:
    tree = _project(tmp_path)
    out = tree / "wheels-here"
    before = tree_state(tree, skip=(out,))
    for written in (
        "dist/cuship/site/index.html",
        "build/cp311/CMakeCache.txt",
        ".git/index",
        "src/cuvecops/__pycache__/cpu.cpython-311.pyc",
        "src/cuvecops.egg-info/PKG-INFO",
        ".venv/lib/x.py",
        "wheels-here/inputs/job.json",
    ):
        (tree / written).parent.mkdir(parents=True, exist_ok=True)
        (tree / written).write_text("made by a build")
    (tree / "scratch-venv").mkdir()
    (tree / "scratch-venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert tree_state(tree, skip=(out,)) == before
    cmake = tree / "CMakeLists.txt"
    stat = cmake.stat()
    os.utime(cmake, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert tree_state(tree, skip=(out,)) != before, "a touched file counts, as make sees it"
