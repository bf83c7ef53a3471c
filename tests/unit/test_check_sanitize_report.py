"""Sanitizer failures as people and CI read them: the verdict, the text section, JSON read back,
a JUnit suite per tool with counts that match, and the stored run."""

from __future__ import annotations

import dataclasses
import json
import shlex
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import pytest

from cuship.check.declare.inputs import CaseSpec
from cuship.check.report.history import as_check_report
from cuship.check.report.render import render_json, render_junit, render_text, summary_line
from cuship.check.report.results import CaseResult, CheckReport, GroupResult
from cuship.check.run.session import record
from cuship.check.sanitize.map import attribute, marker
from cuship.check.sanitize.report import failure_texts, repro_command
from cuship.check.sanitize.results import (
    SanitizedCase,
    SanitizedStatus,
    SanitizerRun,
    StrayFindings,
    summarise,
)
from cuship.store.read import load_runs

H100 = Path(__file__).resolve().parents[1] / "fixtures" / "h100"


def _spec(index: int, n: int = 1000) -> CaseSpec:
    return CaseSpec(index=index, sizes=(("n", n),), distribution="normal", seed=40 + index)


def _findings(name: str) -> SanitizedCase:
    """The findings of a recorded output, as one case's, through the real mapping."""
    text = marker("ready", "w1") + (H100 / f"sanitizer-{name}.txt").read_text()
    return SanitizedCase(
        op="x",
        engine="numba",
        dtype="float32",
        case=_spec(0),
        status="failed",
        report=summarise(attribute(text + marker("case", "1"), ["1"]).cases["1"]),
    )


def _case(op: str, index: int, status: SanitizedStatus = "passed", **extra: object) -> SanitizedCase:  # fmt: skip
    base = SanitizedCase(
        op=op, engine="numba", dtype="float32", case=_spec(index), status=status,
        wall_s=2.0, plain_s=0.25,
    )  # fmt: skip
    return dataclasses.replace(base, **extra)  # type: ignore[arg-type]


OOB = _findings("memcheck-oob")
RACE = _findings("racecheck-race")
MEMCHECK = SanitizerRun(
    tool="memcheck",
    command=("compute-sanitizer", "--tool", "memcheck", "--log-file", "<log>", "python"),
    cases=(
        _case("oob", 0, "failed", report=OOB.report, message="RuntimeError: launch failure"),
        _case("oob", 1),
        _case("clean", 0),
    ),
    wall_s=9.5,
    workers=2,
    errors=4,
)
RACECHECK = SanitizerRun(
    tool="racecheck",
    command=("compute-sanitizer", "--tool", "racecheck"),
    cases=(_case("clean", 0),),
    unattributed=(StrayFindings(where="after the last marker", report=RACE.report),),
    wall_s=3.0,
    workers=1,
)
INITCHECK = SanitizerRun(
    tool="initcheck",
    command=("compute-sanitizer", "--tool", "initcheck"),
    cases=(_case("clean", 0, "error", message="worker process killed by SIGSEGV while running"),),
    workers=1,
)
SYNCCHECK = SanitizerRun(
    tool="synccheck", command=("compute-sanitizer",), note="nothing to sanitize: no GPU case"
)


def _plain() -> tuple[GroupResult, ...]:
    case = CaseResult(case=_spec(0), status="passed", total=8, max_abs=0.0, max_rel=0.0, wall_s=0.25)  # fmt: skip
    return tuple(
        GroupResult(op=op, engine="numba", dtype="float32", rtol=1e-6, atol=1e-5, cases=(case,))
        for op in ("oob", "clean")
    )


REPORT = CheckReport(
    target="tests/fixtures/planted_sanitize",
    device="cuda",
    seed=7,
    quick=True,
    started=10.0,
    finished=40.0,
    groups=_plain(),
    sanitize=(MEMCHECK, RACECHECK, INITCHECK, SYNCCHECK),
)


def test_a_finding_fails_the_run_and_a_clean_pass_does_not() -> None:
    assert (REPORT.verdict, REPORT.exit_code) == ("failed", 1)
    clean = dataclasses.replace(MEMCHECK, cases=(_case("oob", 1), _case("clean", 0)))
    passed = dataclasses.replace(REPORT, sanitize=(clean, SYNCCHECK))
    assert (passed.verdict, passed.exit_code) == ("passed", 0)
    assert summary_line(passed).startswith("passed: 2 passed; sanitize: memcheck clean, synccheck clean")  # fmt: skip
    assert "sanitize: memcheck 1 bad, racecheck 1 bad, initcheck 1 bad" in summary_line(REPORT)


def test_the_text_has_the_cost_the_sanitizer_lines_and_the_command_to_rerun() -> None:
    text = render_text(REPORT)
    assert (
        "sanitize memcheck: 3 cases, 1 bad, 0 unattributed; 6.00 s sanitized vs 0.75 s plain "
        "(8.0x), 9.5 s in all with 2 workers"
    ) in text
    assert "sanitize synccheck: nothing to sanitize: no GPU case" in text
    first = text.split("sanitize memcheck: oob/numba/float32 case 0 ", 1)[1]
    assert first.startswith(
        "(n=1000 normal, seed 40): 4 findings in oob_write: Invalid __global__ write of size "
        "4 bytes (+2 other kinds)\n  Invalid __global__ write of size 4 bytes\n"
        "  at oob_write(float *, int)+0xc0 in planted.cu:8\n"
    )
    assert "  the case under memcheck: RuntimeError: launch failure\n" in first
    assert "sanitize racecheck: 1 finding in shared_race: Error: Race reported" in text
    assert ", after the last marker, in no case" in text
    assert "sanitize initcheck: clean/numba/float32 case 0 (n=1000 normal, seed 40): not checked\n  worker process killed by SIGSEGV" in text  # fmt: skip
    assert len(failure_texts(REPORT)) == 3


def test_the_repro_command_runs_that_case_under_that_tool() -> None:
    command = repro_command(REPORT, "memcheck", MEMCHECK.cases[0])
    assert shlex.split(command) == [
        "cuship", "check", "tests/fixtures/planted_sanitize", "--quick", "--device", "cuda",
        "--sanitize", "memcheck", "--op", "oob", "--engine", "numba", "--dtype", "float32",
        "--seed", "7", "--case", "0",
    ]  # fmt: skip


def test_json_reads_back_whole() -> None:
    doc = json.loads(render_json(REPORT))
    runs = {run["tool"]: run for run in doc["sanitize"]}
    memcheck = runs["memcheck"]
    assert (memcheck["status"], memcheck["slowdown"], memcheck["plain_s"]) == ("failed", 8.0, 0.75)
    bad = memcheck["cases"][0]
    assert (bad["findings"], bad["kernels"], bad["status"]) == (4, ["oob_write"], "failed")
    assert bad["lines"][1] == "at oob_write(float *, int)+0xc0 in planted.cu:8"
    assert runs["synccheck"]["status"] == "empty"
    assert runs["racecheck"]["unattributed"][0]["where"] == "after the last marker"
    again = CheckReport.from_json(doc)
    assert again.sanitize == REPORT.sanitize
    assert render_junit(again) == render_junit(REPORT)


def _suites() -> dict[str, ET.Element]:
    root = ET.fromstring(render_junit(REPORT).split("\n", 1)[1])
    return {str(s.get("name")): s for s in root.findall("testsuite")}


@pytest.mark.parametrize("tool", ["memcheck", "racecheck", "initcheck", "synccheck"])
def test_junit_counts_match_their_testcases(tool: str) -> None:
    suite = _suites()[f"cuship check sanitize {tool}"]
    cases = suite.findall("testcase")
    assert int(suite.get("tests", "-1")) == len(cases)
    for tag, attr in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
        assert int(suite.get(attr, "-1")) == len(suite.findall(f"testcase/{tag}")), attr


def test_junit_failures_name_the_tool_the_kind_and_the_case() -> None:
    suites = _suites()
    memcheck = suites["cuship check sanitize memcheck"]
    names = {c.get("name"): c for c in memcheck.findall("testcase")}
    assert set(names) == {"oob[numba-float32]", "clean[numba-float32]"}
    failure = names["oob[numba-float32]"].find("failure")
    assert failure is not None
    assert failure.get("type") == "cuship.check.sanitize.memcheck"
    message = failure.get("message", "")
    assert message.startswith("memcheck: 1 of 2 cases; 4 findings in oob_write: Invalid __global__")
    assert "--sanitize memcheck --op oob" in message
    assert "Access to 0x7fc5d0800fa0 is out of bounds" in (failure.text or "")
    assert names["oob[numba-float32]"].get("classname") == "cuship.check.sanitize.memcheck.oob"
    stray = suites["cuship check sanitize racecheck"].find("testcase[@name='unattributed']/failure")
    assert stray is not None and "after the last marker" in stray.get("message", "")
    props = {p.get("name"): p.get("value", "") for p in memcheck.findall("properties/property")}
    assert props["device"] == "cuda" and props["sanitize.command"].startswith("compute-sanitizer")
    assert "(8.0x)" in props["sanitize.cost"]
    plain = {s for s in suites if "sanitize" not in s}
    assert plain == {"cuship check"}


def test_the_stored_run_keeps_the_sanitizer_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    import cuship.machine

    fake = SimpleNamespace(to_json=lambda: {"gpus": []})
    monkeypatch.setattr(cuship.machine, "fingerprint", lambda environ: fake)
    store = tmp_path / "r.db"
    record(REPORT, store, project="planted", environ={})
    (stored,) = load_runs(store)
    assert stored.run.verdict == "failed"
    assert stored.run.meta["sanitize"][0]["tool"] == "memcheck"
    assert as_check_report(stored).sanitize == REPORT.sanitize
