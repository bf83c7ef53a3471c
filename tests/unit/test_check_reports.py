"""What CI and people read: JUnit structure and counts, text, JSON, the reproduction command."""

from __future__ import annotations

import dataclasses
import json
import shlex
import xml.etree.ElementTree as ET
from typing import Any

from cuship.check.declare.inputs import CaseSpec
from cuship.check.report.render import render_json, render_junit, render_text, repro_command
from cuship.check.report.results import (
    CaseResult,
    CheckReport,
    GroupResult,
    Regression,
    Status,
    code_env,
)
from cuship.check.run.availability import Unavailable
from cuship.provenance import Extension, PackageOrigin, Provenance


def _case(index: int, status: Status = "passed", **extra: Any) -> CaseResult:
    spec = CaseSpec(index=index, sizes=(("n", 7),), distribution="normal", seed=99 + index)
    return CaseResult(
        case=spec, status=status, total=7, max_abs=1e-7, max_rel=1e-7, wall_s=0.5, **extra
    )


def _group(op: str, engine: str, *cases: CaseResult, skip: str | None = None) -> GroupResult:
    return GroupResult(
        op=op, engine=engine, dtype="float32", rtol=1.3e-6, atol=1e-5, cases=cases, skip_reason=skip
    )


BAD = _case(3, "failed", mismatches=2, worst_index=(4,), worst_actual=0.0, worst_expected=0.25)
REPORT = CheckReport(
    target="examples/cuvecops",
    device="cpu",
    seed=1234,
    quick=True,
    started=100.0,
    finished=112.5,
    groups=(
        _group("saxpy", "native", _case(0), _case(1)),
        _group("softmax", "triton-interpret", _case(0), BAD),
        _group(
            "softmax", "numba-sim", _case(0, "error", message="worker process killed by SIGSEGV")
        ),
        _group("saxpy", "cuda", skip="needs a CUDA GPU and the compiled extension"),
    ),
)


def test_repro_command_names_everything_needed() -> None:
    group = REPORT.groups[1]
    command = repro_command(REPORT, group, BAD)
    assert shlex.split(command) == [
        "cuship", "check", "examples/cuvecops", "--quick", "--device", "cpu",
        "--op", "softmax", "--engine", "triton-interpret", "--dtype", "float32",
        "--seed", "1234", "--case", "3",
    ]  # fmt: skip


def test_junit_has_one_testcase_per_group_and_matching_counts() -> None:
    root = ET.fromstring(render_junit(REPORT))
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    assert int(suite.get("tests", "-1")) == len(cases) == 4
    assert int(suite.get("failures", "-1")) == len(suite.findall("testcase/failure")) == 1
    assert int(suite.get("errors", "-1")) == len(suite.findall("testcase/error")) == 1
    assert int(suite.get("skipped", "-1")) == len(suite.findall("testcase/skipped")) == 1
    names = [c.get("name") for c in cases]
    assert names[1] == "softmax[triton-interpret-float32]"
    assert cases[1].get("classname") == "cuship.check.softmax"
    failure = cases[1].find("failure")
    assert failure is not None
    assert "--seed 1234 --case 3" in failure.get("message", "")
    assert "got 0.0, expected 0.25" in (failure.text or "")
    skipped = cases[3].find("skipped")
    assert skipped is not None and "CUDA GPU" in skipped.get("message", "")
    error = cases[2].find("error")
    assert error is not None and "SIGSEGV" in (error.text or "")
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["seed"] == "1234"


def test_regressions_are_failed_testcases_of_their_own() -> None:
    report = CheckReport(
        target=".", device="cpu", seed=0, quick=False, started=0.0, finished=1.0,
        groups=(_group("saxpy", "native", _case(0)),),
        regressions=(Regression(key="saxpy/native/float32", message="max abs error 2e-06 > baseline"),),
    )  # fmt: skip
    assert report.exit_code == 1
    suites = ET.fromstring(render_junit(report)).findall("testsuite")
    assert [s.get("failures") for s in suites] == ["0", "1"]


def test_verdicts_and_exit_codes() -> None:
    assert REPORT.verdict == "failed" and REPORT.exit_code == 1
    ok = CheckReport(
        target=".", device="cpu", seed=0, quick=False, started=0.0, finished=1.0,
        groups=(_group("a", "native", _case(0)), _group("a", "cuda", skip="no GPU")),
    )  # fmt: skip
    assert ok.exit_code == 0
    empty = CheckReport(
        target=".", device="cpu", seed=0, quick=False, started=0.0, finished=1.0,
        groups=(_group("a", "cuda", skip="no GPU"),),
    )  # fmt: skip
    assert (empty.verdict, empty.exit_code) == ("empty", 4)


def test_text_and_json() -> None:
    text = render_text(REPORT)
    assert "reproduce: cuship check examples/cuvecops --quick" in text
    assert text.rstrip().endswith("(seed 1234, 12.5 s)")
    document = json.loads(render_json(REPORT))
    assert document["verdict"] == "failed"
    assert document["counts"] == {"passed": 1, "failed": 1, "error": 1, "skipped": 1}
    assert document["groups"][1]["cases"][1]["worst_index"] == [4]
    assert GroupResult.from_json(document["groups"][1]) == REPORT.groups[1]


def test_the_reproduce_line_sets_the_environment_that_chose_the_code() -> None:
    environ = {
        "PYTHONPATH": "/work/my lib/src",
        "CUSHIP_GPUS": "none",
        "CUSHIP_STORE": "/tmp/r.db",  # where results go, not what runs
        "HOME": "/root",
    }
    report = dataclasses.replace(REPORT, env=code_env(environ))
    line = next(x for x in render_text(report).splitlines() if x.startswith("reproduce: "))
    assert line.startswith(
        "reproduce: PYTHONPATH='/work/my lib/src' CUSHIP_GPUS=none cuship check "
    )
    assert CheckReport.from_json(report.to_json()).env == report.env
    assert "reproduce: cuship check" in render_text(dataclasses.replace(REPORT, env=code_env({})))


NO_TORCH = Unavailable(
    engine="triton-interpret",
    error="importing torch failed: ModuleNotFoundError: No module named 'torch'",
    fix="pip install torch",
)
PROVENANCE = Provenance(
    packages=(
        PackageOrigin(
            name="cuvecops",
            file="/venv/site-packages/cuvecops/__init__.py",
            origin="installed",
            distribution="cuvecops",
            version="0.1.0",
            extensions=(Extension(module="_cuda", path="/x.so", loaded=True),),
        ),
    )
)


def _unavailable_report(*groups: GroupResult) -> CheckReport:
    return CheckReport(
        target=".", device="cpu", seed=0, quick=False, started=0.0, finished=1.0,
        groups=groups, provenance=PROVENANCE, unavailable=(NO_TORCH,),
    )  # fmt: skip


def test_a_run_where_only_an_unavailable_engine_was_selected_exits_3() -> None:
    skipped = (
        _group("softmax", "triton-interpret", skip=NO_TORCH.reason),
        _group("saxpy", "triton-interpret", skip=NO_TORCH.reason),
        _group("saxpy", "cuda", skip="needs a CUDA GPU"),
    )
    report = _unavailable_report(*skipped)
    assert (report.verdict, report.exit_code) == ("unavailable", 3)
    text = render_text(report)
    assert text.count("No module named 'torch'") == 1
    assert text.count("engine triton-interpret unavailable (see below)") == 2
    assert "package: cuvecops 0.1.0 from /venv/site-packages/cuvecops/__init__.py" in text
    assert "engines unavailable: triton-interpret" in text.splitlines()[-1]
    document = json.loads(render_json(report))
    assert document["exit_code"] == 3
    assert document["unavailable"] == [NO_TORCH.to_json()]
    assert document["provenance"]["packages"][0]["extensions"][0]["loaded"] is True


def test_engines_that_ran_decide_the_verdict_and_junit_lists_the_rest() -> None:
    report = _unavailable_report(
        _group("saxpy", "native", _case(0)),
        _group("saxpy", "triton-interpret", skip=NO_TORCH.reason),
    )
    assert (report.verdict, report.exit_code) == ("passed", 0)
    (suite,) = ET.fromstring(render_junit(report)).findall("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["provenance.cuvecops"] == PROVENANCE.packages[0].describe()
    assert props["unavailable.triton-interpret"] == f"{NO_TORCH.error}; fix: pip install torch"
    skipped = suite.find("testcase/skipped")
    assert skipped is not None and skipped.get("message") == NO_TORCH.reason


def test_a_json_report_reads_back_and_renders_the_same_junit() -> None:
    """cuship gpu-run writes check.json and derives check.xml from it."""
    gated = dataclasses.replace(REPORT, regressions=(Regression(key="saxpy", message="3x worse"),))
    again = CheckReport.from_json(json.loads(render_json(gated)))
    assert again == gated
    assert render_junit(again) == render_junit(gated)


def _raise_no_device() -> None:
    raise RuntimeError("No device were detected on your machine !")


def test_a_package_that_failed_to_import_is_the_first_thing_said() -> None:
    from cuship.provenance import failed_import

    try:
        _raise_no_device()
    except RuntimeError as err:
        error = failed_import(err)
    line = _raise_no_device.__code__.co_firstlineno + 1
    assert error == (
        f"RuntimeError: No device were detected on your machine ! (at {__file__}:{line} in "
        "_raise_no_device)"
    )
    broken = dataclasses.replace(PROVENANCE.packages[0], error=error, origin="source")
    report = dataclasses.replace(
        _unavailable_report(_group("add", "native", _case(0, "error"))),
        provenance=Provenance(packages=(broken,)),
    )
    first = render_text(report).splitlines()[0]
    assert first == f"package cuvecops failed to import from /venv/site-packages/cuvecops: {error}"
    document = json.loads(render_json(report))
    assert document["provenance"]["packages"][0]["error"] == error
