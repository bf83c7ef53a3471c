"""gpu-run's plan (install commands, stage commands and environment) and its exit rule, pure."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from cuship.config import load_config
from cuship.errors import ConfigError, UsageError
from cuship.gpurun.execute import judge_origins
from cuship.gpurun.plan import (
    LAYER_PTH,
    Inside,
    ProjectFacts,
    StagePlan,
    plan_install,
    plan_stages,
    project_facts,
)
from cuship.gpurun.results import (
    PRECEDENCE,
    VERDICTS,
    GpuRunReport,
    InstallResult,
    StageResult,
    overall_exit,
    stage_code,
)
from cuship.gpurun.session import GpuRunRequest, gpu_run_request, interpreter_path
from cuship.machine.interpreter import Interpreter

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cuvecops"
RESULTS = Path("/ci/results")
PY = "/venv/bin/python"


def _by_name(stages: Sequence[StagePlan]) -> dict[str, StagePlan]:
    return {stage.name: stage for stage in stages}


def test_stages_from_the_example_config() -> None:
    project = project_facts(load_config(EXAMPLE))
    assert (project.name, project.pytest_args, project.check, project.bench) == (
        "cuvecops",
        ("tests",),
        True,
        True,
    )
    stages = _by_name(plan_stages(project, PY, RESULTS, environ={}))
    pytest_stage, check, bench = stages["pytest"], stages["check"], stages["bench"]
    assert [s.name for s in plan_stages(project, PY, RESULTS, environ={})][:3] == [
        "pytest",
        "check",
        "check-ptx",
    ]  # check-ptx reported next to the plain check
    assert pytest_stage.argv[:4] == (PY, "-m", "pytest", "--require-gpu")
    assert pytest_stage.argv[-1] == "tests"  # [ci] pytest_args last: they may override ours
    for guard in ("--import-mode=append", "pythonpath=", "no:cacheprovider"):
        assert guard in pytest_stage.argv
    assert f"--junitxml={RESULTS / 'pytest.xml'}" in pytest_stage.argv
    assert "--cuship-origins-dist=cuvecops" in pytest_stage.argv
    assert check.argv == (
        PY, "-m", "cuship", "check", str(EXAMPLE), "--installed",
        "--device", "cuda", "--format", "json", "-o", str(RESULTS / "check.json"),
    )  # fmt: skip
    assert check.outputs == (RESULTS / "check.json", RESULTS / "check.xml")
    assert bench.argv[2:5] == ("cuship", "bench", str(EXAMPLE))
    for flag in ("--assert-floors", "--installed", "--export"):
        assert flag in bench.argv
    assert bench.argv[bench.argv.index("--timer") + 1] == "cuda"
    for stage in stages.values():
        assert stage.cwd == EXAMPLE and stage.skipped is None
        assert stage.log == RESULTS / f"{stage.name}.log"
        assert stage.env == {
            "TRITON_INTERPRET": "0",
            "NUMBA_ENABLE_CUDASIM": "0",
            "PYTHONSAFEPATH": "1",
            "CUSHIP_STORE": str(RESULTS / "results.db"),
        }


def test_unconfigured_stages_are_skipped_with_a_reason() -> None:
    tiny = ProjectFacts(root=Path("/p"), name="tiny")
    stages = _by_name(plan_stages(tiny, PY, RESULTS, environ={"CUSHIP_STORE": "/keep.db"}))
    check, bench = stages["check"], stages["bench"]
    assert check.skipped == "no [check] modules configured"
    assert stages["check-ptx"].skipped == "no [check] modules configured"
    assert bench.skipped is not None and "no [bench] modules" in bench.skipped
    assert "CUSHIP_STORE" not in check.env  # the caller's store is kept
    configured = dataclasses.replace(tiny, check=True, bench=True)
    skipping = _by_name(plan_stages(configured, PY, RESULTS, environ={}, skip_bench=True))
    assert skipping["bench"].skipped == "--skip-bench"


def test_the_sanitize_stage_runs_the_quick_check_under_all_four_tools() -> None:
    project = project_facts(load_config(EXAMPLE))
    stages = plan_stages(project, PY, RESULTS, environ={})
    assert [s.name for s in stages] == ["pytest", "check", "check-ptx", "sanitize", "bench"]
    sanitize = stages[3]
    assert sanitize.argv == (
        PY, "-m", "cuship", "check", str(EXAMPLE), "--installed", "--device", "cuda", "--quick",
        "--sanitize", "memcheck,racecheck,initcheck,synccheck",
        "--format", "json", "-o", str(RESULTS / "sanitize.json"),
    )  # fmt: skip
    assert sanitize.outputs == (RESULTS / "sanitize.json", RESULTS / "sanitize.xml")
    assert sanitize.log == RESULTS / "sanitize.log" and sanitize.skipped is None
    assert sanitize.env == stages[1].env
    skipped = plan_stages(project, PY, RESULTS, environ={}, skip_sanitize=True)[3].skipped
    assert skipped == "--skip-sanitize"
    faked = plan_stages(project, PY, RESULTS, environ={}, gpu_faked=True)[3].skipped
    assert faked == "the GPU is faked (CUSHIP_GPUS): compute-sanitizer needs a real one"


def test_bench_stage_profiles_with_ncu_only_when_asked() -> None:
    project = project_facts(load_config(EXAMPLE))

    def bench_argv(profile: str | None = None) -> tuple[str, ...]:
        stages = plan_stages(project, PY, RESULTS, environ={}, profile=profile)
        return next(s for s in stages if s.name == "bench").argv

    assert "--profile" not in bench_argv()
    profiled = bench_argv(profile="ncu")
    assert profiled[profiled.index("--profile") + 1] == "ncu"
    assert profiled[: len(bench_argv())] == bench_argv()  # the same command, profile added


def test_a_project_without_a_name_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "cuship.toml").write_text("[ci]\n")
    with pytest.raises(ConfigError, match=r"project\.name: no distribution name") as err:
        project_facts(load_config(tmp_path))
    assert err.value.exit_code == 2


PYTHON = Interpreter(
    version="3.12",
    full="3.12.3",
    executable="/ci/venv/bin/python",
    python="3.12.3",
    site=("/ci/venv/lib/python3.12/site-packages",),
    modules=("pip", "pytest", "venv", "ensurepip"),
)
BASE = Inside(interpreter=PYTHON, venv_purelib="/r/venv/lib/python3.12/site-packages")
WHEEL = Path("/w/tiny-1.0-py3-none-any.whl")


def test_venv_install_sees_the_base_packages_and_installs_no_dependencies() -> None:
    plan = plan_install(WHEEL, BASE, in_place=False, venv=Path("/r/venv"))
    make, pip = plan.commands
    assert make == (
        "/ci/venv/bin/python", "-m", "venv", "--clear", "--without-pip", "/r/venv",
    )  # fmt: skip
    assert pip[:4] == ("/r/venv/bin/python", "-m", "pip", "install")
    assert {"--no-deps", "--ignore-installed"} <= set(pip) and pip[-1] == str(WHEEL)
    assert plan.python == "/r/venv/bin/python"
    assert plan.layer == (
        Path("/r/venv/lib/python3.12/site-packages") / LAYER_PTH,
        "import site; site.addsitedir('/ci/venv/lib/python3.12/site-packages')\n",
    )
    without_pip = plan_install(
        WHEEL,
        dataclasses.replace(BASE, interpreter=dataclasses.replace(PYTHON, modules=("venv",))),
        in_place=False,
        venv=Path("/r/venv"),
    )
    assert "--without-pip" not in without_pip.commands[0]  # ensurepip gives the venv its own
    # no --system-site-packages beside the layer: a venv of a venv would see the base Python's
    # packages, which the probed interpreter may not see; a probe that named no site gets them
    unnamed = plan_install(
        WHEEL,
        dataclasses.replace(BASE, interpreter=dataclasses.replace(PYTHON, site=())),
        in_place=False,
        venv=Path("/r/venv"),
    )
    assert "--system-site-packages" in unnamed.commands[0] and unnamed.layer is None


def test_in_place_install_replaces_what_is_there() -> None:
    plan = plan_install(WHEEL, BASE, in_place=True)
    assert plan.mode == "in-place" and plan.python == PYTHON.executable and plan.layer is None
    ((*argv, wheel),) = plan.commands
    assert argv[:4] == [PYTHON.executable, "-m", "pip", "install"]
    assert {"--no-deps", "--force-reinstall"} <= set(argv) and wheel == str(WHEEL)


@pytest.mark.parametrize(
    ("codes", "overall"),
    [
        ([0, 0, 0], 0),
        ([0, 1, 0], 1),
        ([1, 3], 3),  # a missing tool or engine outranks a failure
        ([3, 2, 1], 2),  # bad usage or config outranks everything
        ([4, 1], 1),  # a real failure says more than an empty stage
        ([0, 4], 4),  # an empty stage is never green
        ([], 4),  # nothing ran
    ],
)
def test_exit_precedence(codes: list[int], overall: int) -> None:
    assert PRECEDENCE == (2, 3, 1, 4, 0)
    assert overall_exit(codes) == overall


@pytest.mark.parametrize(
    ("stage", "raw", "code"),
    [
        ("pytest", 0, 0),
        ("pytest", 1, 1),
        ("pytest", 2, 1),  # interrupted: collection errors
        ("pytest", 4, 2),  # usage error: bad [ci] pytest_args
        ("pytest", 5, 4),  # no tests collected
        ("pytest", -11, 1),  # killed by a signal
        ("check", 3, 3),
        ("bench", 4, 4),
        ("bench", 137, 1),
    ],
)
def test_stage_codes(stage: str, raw: int, code: int) -> None:
    assert stage_code(stage, raw) == code


def _stage(name: str, code: int | None) -> StageResult:
    verdict = "not-run" if code is None else VERDICTS[code]
    return StageResult(
        name=name, command=(), env={}, cwd=Path("/p"), log=None, exit_code=code, verdict=verdict
    )


def _report(install_code: int, *stages: StageResult) -> GpuRunReport:
    install = InstallResult(
        mode="venv", python=PY, venv=None, wheel=WHEEL, wheel_sha256="0" * 64, commands=(),
        log=RESULTS / "install.log", exit_code=install_code, verdict="", duration_s=0.0,
    )  # fmt: skip
    return GpuRunReport(
        project=Path("/p"), name="tiny", results=RESULTS, machine={}, wheel={}, install=install,
        stages=stages,
    )  # fmt: skip


def test_report_exit_code_counts_only_what_ran() -> None:
    assert _report(0, _stage("pytest", 0), _stage("check", None)).exit_code == 0
    assert _report(0, _stage("pytest", 1), _stage("check", 3)).exit_code == 3
    assert _report(0, _stage("check", None)).exit_code == 4
    assert _report(3, _stage("pytest", None)).exit_code == 3  # missing dependencies
    report = _report(0, _stage("pytest", 0), _stage("bench", None))
    doc = report.to_json()
    assert doc["verdict"] == "passed" and doc["install"]["log"] == "install.log"
    assert [s["name"] for s in doc["stages"]] == ["pytest", "bench"]
    text = report.to_text().splitlines()
    assert text[1].split() == ["step", "verdict", "exit", "time", "log", "/", "reason"]
    assert text[3].split()[:3] == ["pytest", "passed", "0"]
    assert text[4].split()[:2] == ["bench", "not-run"]
    assert text[-1] == "exit 0 (passed)"


def _origins(tmp_path: Path, *lines: dict[str, object]) -> Path:
    path = tmp_path / "pytest-origins.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_pytest_origins_decide_whether_the_wheel_was_tested(tmp_path: Path) -> None:
    dist = {"location": "/r/venv/site-packages", "top_level": ["tiny"]}
    good = {"module": "tiny", "file": "/r/venv/site-packages/tiny/__init__.py", "installed": True}
    bad = {"module": "tiny", "file": "/p/src/tiny/__init__.py", "installed": False}
    assert judge_origins(_origins(tmp_path, {"modules": [good]}), dist)[0] == 0
    code, notes = judge_origins(_origins(tmp_path, {"modules": [good]}, {"modules": [bad]}), dist)
    assert code == 1 and "tiny from '/p/src/tiny/__init__.py'" in notes[0]
    assert judge_origins(_origins(tmp_path, {"modules": []}), dist) == (
        0,
        ("the tests never imported tiny",),
    )
    assert judge_origins(_origins(tmp_path, {"error": "'tiny' is not installed"}), dist)[0] == 1
    assert judge_origins(tmp_path / "missing.jsonl", dist)[0] == 0


def _request(args: tuple[Path, ...], wheels: tuple[Path, ...], **more: Any) -> GpuRunRequest:
    return gpu_run_request(args, wheels=wheels, results=Path("out"), **more)


def test_the_command_line_takes_a_glob_after_wheels_and_one_path() -> None:
    request = _request((Path("proj"), Path("w/b.whl")), (Path("w/a.whl"),))
    assert (request.path, request.wheels) == (Path("proj"), (Path("w/a.whl"), Path("w/b.whl")))
    assert _request((), (Path("w"),)).path == Path()
    with pytest.raises(UsageError, match="one project PATH"):
        _request((Path("a"), Path("b")), (Path("w"),))
    with pytest.raises(UsageError, match="--wheels is required"):
        _request((Path("proj"),), ())


def test_venv_and_in_place_exclude_each_other() -> None:
    assert _request((), (Path("w"),), in_place=True).in_place
    with pytest.raises(UsageError, match="--venv and --in-place exclude each other"):
        _request((), (Path("w"),), in_place=True, venv=Path("v"))


def test_python_must_name_an_interpreter() -> None:
    assert interpreter_path(None) == sys.executable
    with pytest.raises(UsageError, match="--python: no interpreter at '/no/such/python'"):
        interpreter_path("/no/such/python")
