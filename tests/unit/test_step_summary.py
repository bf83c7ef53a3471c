"""GitHub's job summary: each command appends its section under GitHub Actions, and only there."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from cuship.bench.results import PointResult
from cuship.bench.timers.measure import Measurement
from cuship.check.declare.inputs import CaseSpec
from cuship.check.report.results import CaseResult, CheckReport, GroupResult
from cuship.cli import main
from cuship.cli._console import Console
from cuship.cli._summary import (
    ROWS,
    bench_markdown,
    build_markdown,
    check_markdown,
    gpu_run_markdown,
    write_step_summary,
)
from cuship.gpurun.results import GpuRunReport, InstallResult, StageResult
from tests.bench_reports import report_of
from tests.hostile_wheels import corrupt_deflate
from tests.wheel_factory import make_wheel


def _console() -> tuple[Console, io.StringIO]:
    err = io.StringIO()
    return Console(github=False, out=io.StringIO(), err=err), err


def test_nothing_is_written_outside_github_actions(tmp_path: Path) -> None:
    target = tmp_path / "summary.md"
    console, _ = _console()
    assert not write_step_summary(console, "# hi", {"GITHUB_STEP_SUMMARY": str(target)})
    assert not target.exists()
    assert not write_step_summary(console, "# hi", {"GITHUB_ACTIONS": "true"})


def test_sections_are_appended_in_order(tmp_path: Path) -> None:
    target = tmp_path / "summary.md"
    target.write_text("earlier step's text\n")
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(target)}
    console, _ = _console()
    assert write_step_summary(console, "### one", env)
    assert write_step_summary(console, "### two\n", env)
    assert target.read_text() == "earlier step's text\n### one\n\n### two\n\n"


def test_an_unwritable_summary_is_a_warning_not_a_failure(tmp_path: Path) -> None:
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(tmp_path / "no" / "such" / "f")}
    console, err = _console()
    assert not write_step_summary(console, "### one", env)
    assert "cannot append to GITHUB_STEP_SUMMARY" in err.getvalue()


def _group(op: str, status: str) -> GroupResult:
    spec = CaseSpec(index=0, sizes=(("n", 4),), distribution="normal", seed=1)
    case = CaseResult(case=spec, status=status)  # type: ignore[arg-type]
    return GroupResult(op=op, engine="numpy", dtype="float32", rtol=1e-5, atol=1e-6, cases=(case,))


def test_a_check_section_lists_what_did_not_pass() -> None:
    groups = (_group("add", "passed"), _group("sum|rows", "failed"))
    report = CheckReport(
        target="proj", device="cpu", seed=1, quick=True, started=0.0, finished=1.0, groups=groups
    )
    text = check_markdown(report)
    assert text.startswith("### cuship check proj\n\nfailed: 1 passed, 1 failed")
    assert "| sum\\|rows | numpy | float32 | failed |  |" in text  # a pipe cannot break the row
    assert "| add |" not in text


def test_a_long_table_is_cut_and_counted() -> None:
    from cuship.builder.run.batch import Outcome

    outcomes = [Outcome(job_id=f"job{i}", status="needs-runner", detail="arm64") for i in range(70)]
    text = build_markdown("cuship build", outcomes)
    assert text.count("| needs-runner |") == ROWS and "20 more rows not shown" in text
    assert "70 needs-runner" in text


def test_cuship_index_appends_its_section_with_what_it_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_wheel(tmp_path / "wheels", "good", "1.0")
    corrupt_deflate(tmp_path / "wheels", "broken")
    target = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(target))
    main(["index", str(tmp_path / "wheels"), "-o", str(tmp_path / "site"), "--skip-bad"])
    text = target.read_text()
    assert text.startswith(f"### cuship index {tmp_path / 'site'}\n")
    assert "1 wheels, 1 projects" in text
    assert "| left out | reason |" in text


def _point(key: str, status: str, median: float = 2e-6) -> PointResult:
    measurement = None
    if status != "errored":
        measurement = Measurement(samples=(median,) * 3, stop_reason="fixed", rel_noise=0.01)
    error = "ValueError: x" if status == "errored" else None
    return PointResult(
        key=key,
        case=key.partition("[")[0],
        params={"n": 8},
        status=status,  # type: ignore[arg-type]
        measurement=measurement,
        error=error,
    )


def test_a_bench_section_lists_the_points_that_went_wrong_or_all_when_none_did() -> None:
    report = report_of(_point("add[n=8]", "ok"), _point("boom[n=8]", "errored"))
    text = bench_markdown(report)
    head = "### cuship bench demo on NVIDIA H100 80GB HBM3\n\n2 points: 1 ok, 0 unsure, 1 errored"
    assert text.startswith(head) and "; verdict errored\n" in text
    assert "| case | params | median ± noise | throughput | stop | verdict |" in text
    assert "| boom | n=8 |" in text and "ValueError: x" in text
    assert "| add |" not in text
    every = bench_markdown(report_of(*(_point(f"p{i}[n=8]", "ok") for i in range(60))))
    assert every.count("| n=8 |") == ROWS and "10 more rows not shown" in every


def _gpu_run_report() -> GpuRunReport:
    install = InstallResult(
        mode="venv", python="python3", venv=None, wheel=Path("w.whl"), wheel_sha256="0" * 64,
        commands=(), log=Path("r/install.log"), exit_code=0, verdict="passed", duration_s=2.0,
    )  # fmt: skip
    stages = (
        StageResult(
            name="pytest", command=(), env={}, cwd=Path("/p"), log=Path("r/pytest.log"),
            exit_code=1, verdict="failed", duration_s=3.0, reason="2 tests failed",
        ),
        StageResult(
            name="bench", command=(), env={}, cwd=Path("/p"), log=None, exit_code=None,
            verdict="skipped", reason="--skip-bench",
        ),
    )  # fmt: skip
    return GpuRunReport(
        project=Path("/p"), name="tiny", results=Path("r"), install=install, stages=stages,
        machine={"gpus": [{"name": "H100", "cc": "9.0"}], "gpu_faked": True},
        wheel={"filename": "tiny-1.0-cp312-cp312-linux_x86_64.whl", "why": "best fit"},
    )  # fmt: skip


def test_a_gpu_run_section_has_one_row_per_step() -> None:
    lines = gpu_run_markdown(_gpu_run_report()).splitlines()
    assert lines[0] == "### cuship gpu-run tiny on H100 (9.0) (faked)"
    assert lines[2] == "wheel tiny-1.0-cp312-cp312-linux_x86_64.whl: exit 1 (failed)"
    rows = [line for line in lines if line.startswith("| ")][1:]
    assert [row.split(" | ")[0:2] for row in rows] == [
        ["| install", "passed"],
        ["| pytest", "failed"],
        ["| bench", "skipped"],
    ]
    assert "2 tests failed" in rows[1]


def test_cuship_bench_and_gpu_run_append_their_sections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cuship.bench.session
    import cuship.gpurun.session

    bench = report_of(_point("add[n=8]", "ok"))
    monkeypatch.setattr(cuship.bench.session, "run_bench", lambda *a, **k: bench)
    gpu_run = _gpu_run_report()
    monkeypatch.setattr(cuship.gpurun.session, "gpu_run", lambda *a, **k: gpu_run)
    target = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(target))
    assert main(["bench", "run", str(tmp_path)]) == 0
    assert main(["gpu-run", str(tmp_path), "--wheels", str(tmp_path)]) == 1
    sections = target.read_text().split("\n\n### ")
    assert sections[0].startswith("### cuship bench demo on NVIDIA H100 80GB HBM3\n\n1 points")
    assert sections[1].startswith("cuship gpu-run tiny on H100 (9.0) (faked)\n")
