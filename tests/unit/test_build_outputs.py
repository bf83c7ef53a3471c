"""Where `cuship build` and `cuship ship` write by default (the project's dist/cuship, never the
current directory), what --dry-run says about each job's interpreter, and the progress across
jobs: a live display on a terminal, plain lines in CI, with --json and in pipes."""

from __future__ import annotations

import io
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from cuship.builder.host.interpreters import Interpreter, Interpreters
from cuship.builder.model import BuildPlan, Host
from cuship.builder.plan import plan_job
from cuship.builder.run import batch
from cuship.builder.run.smoke import Smoke
from cuship.cli import cli
from cuship.cli._common import default_out, run_cli
from cuship.cli._console import Console
from cuship.cli._progress import JobBoard, ProgressDisplay, in_ci, live_progress
from cuship.compat import load
from cuship.config import load_config
from cuship.events import Event, collect
from cuship.matrix import jobs_with_configs
from tests.build_fakes import job_result

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cuvecops"
RUNNING = Interpreter(
    version="3.11", full="3.11.7", executable="/usr/bin/python3", source="running"
)
PYENV = Interpreter(
    version="3.12", full="3.12.1", executable="/p/3.12.1/bin/python3.12", source="pyenv"
)


def _host(*_: Any, **__: Any) -> Host:
    return Host(
        python="3.11",
        python_exe="/usr/bin/python3",
        nvcc="/usr/local/cuda/bin/nvcc",
        cuda="13.0.88",
        cpus=2,
        memory_available_gib=8.0,
        interpreters=Interpreters(
            found={"3.11": RUNNING, "3.12": PYENV}, looked=("the running interpreter",)
        ),
    )


def test_the_default_output_is_the_project_s_dist_cuship() -> None:
    assert default_out(load_config(EXAMPLE)) == EXAMPLE.resolve() / "dist" / "cuship"


def test_dry_run_names_each_job_s_interpreter_and_writes_under_the_project(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from cuship.cli import build

    monkeypatch.setattr(build, "detect_host", _host)
    monkeypatch.chdir(tmp_path)
    job = "cuvecops-0.1.0-cp312-cu130"
    assert run_cli(cli, ["build", str(EXAMPLE), "--job", job, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"{job} (local; runnable here)" in out
    assert "(container" not in out, "--mode defaults to local: no container plan beside"
    assert "# Python 3.12.1 (pyenv: /p/3.12.1/bin/python3.12); builds in " in out
    wheels = EXAMPLE.resolve() / "dist" / "cuship" / "wheels"
    assert f"{wheels}/envs/cp312-" in out and f"-w {wheels}/raw/{job} " in out
    assert not list(tmp_path.iterdir()), "nothing in the current directory"


def _plans(tmp_path: Path) -> list[BuildPlan]:
    pairs = jobs_with_configs(load_config(EXAMPLE), load())
    return [
        plan_job(job, cfg, _host(), mode="local", out_dir=tmp_path)
        for cfg, job in pairs
        if job.cuda.major == 13
    ]


def _events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Event]:
    monkeypatch.setattr(
        batch,
        "run_plan",
        lambda plan, **_: job_result(
            plan, smoke=Smoke(said="ok", env="isolated"), seconds=1.0, python=plan.python
        ),
    )
    events: list[Event] = []
    batch.build_all(_plans(tmp_path), emit=collect(events))
    return events


def test_the_builder_says_how_far_it_got(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    said = [e.message for e in _events(tmp_path, monkeypatch) if e.level == "progress"]
    assert said == [
        "2 of 4 jobs to build here",
        "[1/2] cuvecops-0.1.0-cp311-cu130: Python 3.11.7 (running: /usr/bin/python3)",
        "[1/2] cuvecops-0.1.0-cp311-cu130: built in 0.0 s",
        "[2/2] cuvecops-0.1.0-cp312-cu130: Python 3.12.1 (pyenv: /p/3.12.1/bin/python3.12)",
        "[2/2] cuvecops-0.1.0-cp312-cu130: built in 0.0 s",
    ]


def test_the_job_board_counts_done_running_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    board = JobBoard()
    seen = []
    for event in _events(tmp_path, monkeypatch)[:3]:
        board.apply(event)
        seen.append(board.summary())
    assert seen == [
        "jobs: 0 done · 0 running · 2 left",
        "jobs: 0 done · 1 running · 1 left",
        "jobs: 0 done · 1 running · 1 left",
    ]
    board.apply(
        Event(
            level="info",
            topic="build",
            message="j: build the wheel",
            data={"job": "x", "step": "s"},
        )
    )
    assert board.running == {"cuvecops-0.1.0-cp311-cu130": "starting"}, "an unknown job is ignored"
    step = Event(
        level="info",
        topic="build",
        message="cuvecops-0.1.0-cp311-cu130: build the raw wheel",
        data={"job": "cuvecops-0.1.0-cp311-cu130", "step": "build-wheel"},
    )
    board.apply(step)
    assert board.running == {"cuvecops-0.1.0-cp311-cu130": "build the raw wheel"}


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _replay(events: Iterable[Event], *, tty: bool, github: bool = False) -> str:
    err = _Tty() if tty else io.StringIO()
    console = Console(github=github, out=io.StringIO(), err=err)
    live = live_progress(console, as_json=False, environ={})
    with ProgressDisplay(console, live=live) as emit:
        for event in events:
            emit(event)
    return err.getvalue()


def test_a_terminal_gets_the_live_display_and_a_line_per_finished_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown = _replay(_events(tmp_path, monkeypatch), tty=True)
    assert "[1/2] cuvecops-0.1.0-cp311-cu130: built in 0.0 s" in shown
    assert "[2/2] cuvecops-0.1.0-cp312-cu130: built in 0.0 s" in shown
    assert "jobs: " in shown and " done · " in shown, "the bar across jobs was drawn"
    assert "cuvecops-0.1.0-cp311-cu130: Python 3.11.7" not in shown, "job starts show in the bar"


def test_ci_pipes_and_json_get_plain_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events = _events(tmp_path, monkeypatch)
    plain = _replay(events, tty=False)
    assert "jobs: " not in plain
    lines = plain.splitlines()
    assert "2 of 4 jobs to build here" in lines
    assert "[2/2] cuvecops-0.1.0-cp312-cu130: built in 0.0 s" in lines
    console = Console(github=False, out=io.StringIO(), err=_Tty())
    assert live_progress(console, as_json=False, environ={})
    assert not live_progress(console, as_json=True, environ={})
    assert not live_progress(console, as_json=False, environ={"CI": "true"})
    assert not live_progress(Console(github=True, err=_Tty()), as_json=False, environ={})
    assert in_ci({"CI": "1"}) and in_ci({"GITHUB_ACTIONS": "true"})
    assert not in_ci({"CI": "false"}) and not in_ci({})
