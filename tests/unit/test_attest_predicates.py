"""Predicates (SLSA build provenance, check and bench verdicts) and the three commands in-process."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from cuship.attest import (
    BENCH_PREDICATE,
    BUILD_TYPE,
    BuildRun,
    bench_predicate,
    build_predicate,
    builder_identity,
    check_predicate,
    jobs_from_results,
)
from cuship.check.declare.inputs import CaseSpec
from cuship.check.report.results import CaseResult, CheckReport, GroupResult
from cuship.cli import main
from cuship.docs.documents import schema_file
from cuship.errors import InputError
from cuship.wheel.audit import ObjectReport, WheelReport
from tests.jsondocs import schema_errors

WHEEL = "torchops-0.1.0+cu128torch2.8-cp311-cp311-linux_x86_64.whl"
MATRIX_JOB = {
    "id": "torchops-0.1.0-cp311-cu128-torch2.8",
    "project": "torchops",
    "wheel_version": "0.1.0+cu128torch2.8",
    "python": "3.11",
    "python_tag": "cp311",
    "cuda": "12.8.1",
    "torch": "2.8",
    "arch": "8.0;9.0;12.0+PTX",
    "platform": "linux_x86_64",
    "label": "cu128torch2.8",
}
BENCH_EXPORT = {
    "format": "cuship-bench/1",
    "verdict": "passed",
    "environment": {"gpus": [{"name": "NVIDIA H100"}], "driver_version": "580.65.06"},
    "results": [
        {"name": "vec_add[n=1048576]", "median_s": 1.2e-5, "verdict": "ok"},
        {"name": "softmax[n=4096]", "median_s": 3.4e-5, "verdict": "regressed"},
        "not a row",
    ],
}


def _report() -> WheelReport:
    extension = ObjectReport(
        path="torchops/_cuda.cpython-311-x86_64-linux-gnu.so",
        size=1000,
        machine="x86_64",
        soname=None,
        needed=("libcudart.so.12",),
        sass=("80", "90"),
        ptx=("120",),
        lto=(),
        ptx_compressed=False,
        sass_compressed=False,
        fatbin_size=900,
        entries=3,
        containers=1,
    )
    return WheelReport(
        path=WHEEL,
        filename=WHEEL,
        name="torchops",
        version="0.1.0+cu128torch2.8",
        local="cu128torch2.8",
        tags=("cp311-cp311-linux_x86_64",),
        size=2000,
        extensions=(extension,),
        bundled_libs=(),
        bundled_cuda_libs=(),
    )


RUN = BuildRun(
    builder_id="https://github.com/o/r/.github/workflows/ci.yml@refs/heads/main",
    invocation_id="https://github.com/o/r/actions/runs/7/attempts/1",
    started_on=None,
    finished_on="2026-11-21T10:00:00Z",
    toolchain={"nvcc": "13.0.88", "torch": "2.8.0", "python": "3.11.7"},
)


def test_build_predicate_is_slsa_provenance_with_the_matrix_entry_and_arches() -> None:
    predicate = build_predicate(
        [_report()], run=RUN, jobs=jobs_from_results({"jobs": [MATRIX_JOB]})
    )
    definition = predicate["buildDefinition"]
    assert definition["buildType"] == BUILD_TYPE
    (entry,) = definition["externalParameters"]["jobs"]
    assert entry["id"] == MATRIX_JOB["id"]
    assert (entry["python"], entry["cuda"], entry["torch"], entry["arch"]) == (
        "3.11",
        "12.8.1",
        "2.8",
        "8.0;9.0;12.0+PTX",
    )
    assert {d["name"]: d["annotations"]["version"] for d in definition["resolvedDependencies"]} == {
        "nvcc": "13.0.88",
        "torch": "2.8.0",
        "python": "3.11.7",
    }
    details = predicate["runDetails"]
    assert details["builder"] == {"id": RUN.builder_id}
    assert details["metadata"] == {
        "finishedOn": "2026-11-21T10:00:00Z",
        "invocationId": RUN.invocation_id,
    }
    (arches,) = details["byproducts"]
    assert arches["name"] == WHEEL
    assert (arches["annotations"]["sass"], arches["annotations"]["ptx"]) == (["80", "90"], ["120"])


def test_build_entry_comes_from_the_wheel_name_without_results_and_from_build_json_ids() -> None:
    (entry,) = build_predicate([_report()], run=RUN)["buildDefinition"]["externalParameters"][
        "jobs"
    ]
    assert entry == {
        "wheel": WHEEL,
        "id": None,
        "python": "3.11",
        "label": "cu128torch2.8",
        "cuda": "12.8",
        "torch": "2.8",
    }
    build_json = [{"job": "job-7", "status": "built", "wheel": f"/w/{WHEEL}"}]
    jobs = jobs_from_results(build_json)
    (entry,) = build_predicate([_report()], run=RUN, jobs=jobs)["buildDefinition"][
        "externalParameters"
    ]["jobs"]
    assert entry["id"] == "job-7"
    with pytest.raises(InputError, match="build results must be"):
        jobs_from_results({"something": "else"})


def test_builder_identity_names_the_ci_run_or_a_local_builder() -> None:
    github = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_WORKFLOW_REF": "o/r/.github/workflows/ci.yml@refs/heads/main",
        "GITHUB_RUN_ID": "7",
    }
    assert builder_identity(github) == (RUN.builder_id, RUN.invocation_id)
    assert builder_identity({}) == ("https://cuship.dev/builder/local/v1", None)


def _check_json() -> dict[str, Any]:
    case = CaseSpec(index=0, sizes=(("n", 1024),), distribution="normal", seed=1)
    good = CaseResult(case=case, status="passed", total=1024, max_abs=0.0, max_rel=0.0)
    bad = CaseResult(case=case, status="failed", total=1024, mismatches=3, max_abs=0.5)
    report = CheckReport(
        target="examples/cuvecops",
        device="cpu",
        seed=1,
        quick=True,
        started=1.0,
        finished=2.0,
        groups=(
            GroupResult(
                op="vec_add", engine="triton", dtype="float32", rtol=1e-5, atol=1e-6, cases=(good,)
            ),
            GroupResult(
                op="softmax", engine="numba", dtype="float32", rtol=1e-5, atol=1e-6, cases=(bad,)
            ),
        ),
    )
    return report.to_json()


def test_check_predicate_carries_verdicts_per_op_and_case_and_the_environment() -> None:
    predicate = check_predicate(_check_json(), environment={"python": "3.11.7"})
    assert predicate["verdict"] == "failed"
    assert [(g["op"], g["status"]) for g in predicate["groups"]] == [
        ("vec_add", "passed"),
        ("softmax", "failed"),
    ]
    assert predicate["groups"][1]["cases"][0]["status"] == "failed"
    assert predicate["environment"] == {"python": "3.11.7"}
    assert predicate["environment_source"] == "attesting machine"
    with pytest.raises(InputError, match="no 'verdict' and 'groups'"):
        check_predicate({"format": "cuship-bench/1"}, environment={})


def test_bench_predicate_of_a_real_export_keeps_verdict_fingerprint_and_clocks() -> None:
    from cuship.bench.results import PointResult, to_json
    from cuship.bench.timers.measure import Measurement
    from tests.bench_reports import FINGERPRINT, report_of

    m = Measurement(
        samples=(1.0, 2.0), throttled=(1,), stop_reason="fixed", rel_noise=0.1,
        clocks=(1980, 1500), max_clock=1980,
    )  # fmt: skip
    result = PointResult(key="k", case="k", params={}, status="ok", measurement=m)
    predicate = bench_predicate(to_json(report_of(result)), environment={"ignored": True})
    assert predicate["verdict"] == "ok" and predicate["environment"] == FINGERPRINT
    assert predicate["environment_source"] == "results"
    assert predicate["results"][0]["clocks"]["throttled_fraction"] == 0.5


def test_bench_predicate_reads_the_export_tolerantly() -> None:
    predicate = bench_predicate(BENCH_EXPORT, environment={"ignored": True})
    assert [r["verdict"] for r in predicate["results"]] == ["ok", "regressed"]
    assert predicate["environment"]["driver_version"] == "580.65.06"
    assert predicate["environment_source"] == "results"
    renamed = {"format": "cuship-bench/1", "benchmarks": [{"name": "x"}]}
    assert bench_predicate(renamed, environment={"cpus": 2})["environment"] == {"cpus": 2}
    with pytest.raises(InputError, match="expected 'cuship-bench/1'"):
        bench_predicate({"format": "asv"}, environment={})


def test_commands_round_trip_and_exit_codes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = tmp_path / "key"
    assert main(["keygen", "-o", str(key)]) == 0
    assert main(["keygen", "-o", str(key)]) == 2
    results = tmp_path / "bench.json"
    results.write_text(json.dumps(BENCH_EXPORT))
    assert main(["attest", str(results), "--key", str(key), "--predicate", "bench"]) == 0
    envelope = tmp_path / "bench.json.intoto.jsonl"
    payload = json.loads(base64.b64decode(json.loads(envelope.read_text())["payload"]))
    assert payload["predicateType"] == BENCH_PREDICATE
    capsys.readouterr()
    verify = ["verify-attestation", str(envelope), str(results), "--key", f"{key}.pub"]
    assert main([*verify, "--json"]) == 0
    verified = json.loads(capsys.readouterr().out)
    assert verified["ok"] is True
    assert schema_errors(schema_file("verify-attestation"), verified) == []
    results.write_text(json.dumps({**BENCH_EXPORT, "verdict": "failed"}))
    assert main(verify) == 1
    assert "the statement says" in capsys.readouterr().err
    assert main(["verify-attestation", str(envelope), "--key", str(tmp_path / "nope.pub")]) == 2
    assert main(["attest", str(results), "--key", str(key), "--predicate", "check"]) == 2
