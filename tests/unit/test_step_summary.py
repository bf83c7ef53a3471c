"""GitHub's job summary: each command appends its section under GitHub Actions, and only there."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from cuship.check.declare.inputs import CaseSpec
from cuship.check.report.results import CaseResult, CheckReport, GroupResult
from cuship.cli import main
from cuship.cli._console import Console
from cuship.cli._summary import ROWS, build_markdown, check_markdown, write_step_summary
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
