"""``cuship check --format json`` and ``cuship gpu-run --json`` follow their published JSON
Schemas: reports made of real library objects (a real wheel chosen for a faked H100, real
sanitizer findings summarised) pass; a key missing, an unknown key or a wrong type fails."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from cuship.check.declare.inputs import CaseSpec
from cuship.check.report.results import CaseResult, CheckReport, GroupResult, Regression
from cuship.check.run.availability import Unavailable
from cuship.check.sanitize.parse import Finding
from cuship.check.sanitize.results import SanitizedCase, SanitizerRun, StrayFindings, summarise
from cuship.docs.documents import document_schemas
from cuship.gpurun.results import GpuRunReport, InstallResult, StageResult
from cuship.gpurun.session import machine_json
from cuship.gpurun.wheels import choose, read_wheels
from cuship.machine import fingerprint
from cuship.provenance import Extension, PackageOrigin, Provenance
from cuship.resolve.model import target_of
from tests.jsondocs import CHECK, GPU_RUN, SHIP, schema_errors
from tests.unit.test_gpurun_wheels import H100
from tests.unit.test_json_documents import _objects, _ship
from tests.unit.test_machine import FakeProbe
from tests.wheel_factory import make_wheel

SPEC = CaseSpec(index=3, sizes=(("n", 1025),), distribution="normal", seed=7, scalars=(("a", 2.5),))


def _cases() -> tuple[CaseResult, ...]:
    passed = CaseResult(case=SPEC, status="passed", total=1025, max_abs=0.0, max_rel=0.0)
    worst = {"status": "failed", "total": 1025, "mismatches": 2, "max_abs": float("inf")}
    worst |= {"max_rel": float("nan"), "worst_index": [17], "worst_actual": 1.5}
    worst |= {"worst_expected": 1.0, "output": "y", "message": "2 of 1025 differ"}
    return passed, CaseResult.from_worker(SPEC, worst, wall_s=0.25)


def _sanitize() -> SanitizerRun:
    finding = Finding(kind="Invalid __global__ write", lines=("= Invalid write",), kernel="k()")
    case = SanitizedCase(
        op="saxpy",
        engine="cuda",
        dtype="float32",
        case=SPEC,
        status="failed",
        report=summarise([finding]),
        wall_s=1.5,
        plain_s=0.01,
    )
    stray = StrayFindings(where="worker exit", report=summarise([finding]))
    return SanitizerRun(
        tool="memcheck",
        command=("compute-sanitizer", "--log-file", "<log>"),
        cases=(case,),
        unattributed=(stray,),
        wall_s=3.0,
        workers=2,
        errors=1,
    )


def _check() -> CheckReport:
    ext = Extension(module="_cuda", path="/src/demo/_cuda.so", loaded=False, error="ImportError")
    origin = PackageOrigin(name="demo", file="/src/demo/__init__.py", origin="source")
    origin = PackageOrigin(**{**_fields(origin), "extensions": (ext,)})
    groups = (
        GroupResult(
            op="saxpy", engine="native", dtype="float32", rtol=1e-5, atol=0, cases=_cases()
        ),
        GroupResult(op="saxpy", engine="triton", dtype="float32", rtol=0, atol=0, skip_reason="no"),
    )
    return CheckReport(
        target="examples/cuvecops",
        device="cuda",
        seed=1,
        quick=True,
        started=1.0,
        finished=2.5,
        groups=groups,
        regressions=(Regression(key="saxpy/native/float32", message="max abs 3x"),),
        provenance=Provenance(packages=(origin,), note="numpy not traced"),
        unavailable=(Unavailable(engine="triton", error="ModuleNotFoundError", fix="pip"),),
        sanitize=(_sanitize(), SanitizerRun(tool="racecheck", command=(), note="no GPU case")),
        force_ptx=True,
        jit=("sm_90: demo/_cuda.so",),
        env=(("PYTHONPATH", "src"),),
    )


def _fields(origin: PackageOrigin) -> dict[str, Any]:
    return {f.name: getattr(origin, f.name) for f in dataclasses.fields(PackageOrigin)}


def test_a_check_report_with_every_part_follows_the_check_schema() -> None:
    document = _check().to_json()
    assert document["verdict"] == "failed" and document["groups"][0]["max_abs"] == "inf"
    assert schema_errors(CHECK, document) == []
    assert schema_errors(CHECK, CheckReport.from_json(document).to_json()) == []


def test_the_check_schema_refuses_a_missing_key_an_unknown_key_and_a_wrong_type() -> None:
    good: dict[str, Any] = _check().to_json()
    group = good["groups"][0]
    missing = {**good, "groups": [{k: v for k, v in group.items() if k != "rtol"}]}
    unknown_case = {**group, "cases": [{**group["cases"][0], "colour": "red"}]}
    unknown = {**good, "groups": [unknown_case]}
    run = good["sanitize"][0]
    wrong_type = {**good, "sanitize": [{**run, "workers": "2"}]}
    bad_origin = {**good, "provenance": {"packages": [{}], "note": None}}
    for document in (missing, unknown, wrong_type, bad_origin):
        assert schema_errors(CHECK, document) != []


def test_ship_holds_its_check_to_the_check_schema(tmp_path: Path) -> None:
    good: dict[str, Any] = _ship(tmp_path, check=True, indexed=True).to_json("demo")
    assert schema_errors(SHIP, {**good, "check": _check().to_json()}) == []
    groups = [{**_check().to_json()["groups"][0], "extra": 1}]
    assert schema_errors(SHIP, {**good, "check": {**good["check"], "groups": groups}}) != []


def _gpu_run(tmp_path: Path) -> GpuRunReport:
    results = tmp_path / "results"
    wheel = make_wheel(tmp_path / "wheels", "tinypkg", "0.2.0+cu130")
    make_wheel(tmp_path / "wheels", "other", "9.0")
    fp = fingerprint(H100, FakeProbe())
    choice = choose("tinypkg", read_wheels([tmp_path / "wheels"]), target_of(fp))
    install = InstallResult(
        mode="venv",
        python="/venv/bin/python",
        venv=results / "venv",
        wheel=wheel,
        wheel_sha256="ab" * 32,
        commands=(("python", "-m", "pip", "install", str(wheel)),),
        log=results / "install.log",
        exit_code=0,
        verdict="passed",
        duration_s=2.0,
        dist={"location": "/venv/lib", "version": "0.2.0+cu130", "origins": {"tinypkg": None}},
    )
    ran = StageResult(
        name="check",
        command=("cuship", "check"),
        env={"CUDA_VISIBLE_DEVICES": "0"},
        cwd=tmp_path,
        log=results / "check.log",
        exit_code=1,
        raw_exit_code=1,
        duration_s=4.2,
        verdict="failed",
        outputs=(results / "check.json",),
        notes=("faked GPU",),
    )
    skipped = StageResult(
        name="bench", command=(), env={}, cwd=tmp_path, log=None, exit_code=None,
        verdict="skipped", reason="--skip-bench",
    )  # fmt: skip
    return GpuRunReport(
        project=tmp_path,
        name="tinypkg",
        results=results,
        machine={**machine_json(fp), "python": "3.12.1"},
        wheel=choice.to_json(),
        install=install,
        stages=(ran, skipped),
        started="2025-01-01T00:00:00+00:00",
        duration_s=7.0,
        notes=("the GPU is faked",),
    )


def test_a_gpu_run_report_follows_the_gpu_run_schema(tmp_path: Path) -> None:
    document = _gpu_run(tmp_path).to_json()
    assert document["verdict"] == "failed" and document["wheel"]["rejected"]
    assert schema_errors(GPU_RUN, document) == []


@pytest.mark.parametrize(
    ("part", "change"),
    [
        ("machine", {"gpu_faked": "yes"}),
        ("install", {"colour": "red"}),
        ("wheel", {"target": {}}),
    ],
)
def test_the_gpu_run_schema_refuses_a_wrong_part(
    tmp_path: Path, part: str, change: dict[str, Any]
) -> None:
    good: dict[str, Any] = _gpu_run(tmp_path).to_json()
    assert schema_errors(GPU_RUN, {**good, part: {**good[part], **change}}) != []
    assert schema_errors(GPU_RUN, {k: v for k, v in good.items() if k != part}) != []


@pytest.mark.parametrize("name", [CHECK, GPU_RUN, SHIP])
def test_every_key_is_described_and_every_object_closed(name: str) -> None:
    for obj in _objects(document_schemas()[name]):
        assert obj["additionalProperties"] is False
        for key, sub in obj["properties"].items():
            assert sub.get("description"), f"{name}: {key} has no description"
