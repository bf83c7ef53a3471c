"""``cuship build --json`` and ``cuship ship --json`` follow their published JSON Schemas: the
documents made from real library objects (a real wheel inspected, a real index written) pass,
and a document with a key missing, a wrong type or an unknown key fails."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs in [dev]
import pytest

from cuship import index
from cuship.builder.archflags import NvccCalls
from cuship.builder.host.interpreters import Interpreter
from cuship.builder.run.batch import Outcome
from cuship.builder.run.execute import JobResult
from cuship.builder.run.smoke import Smoke
from cuship.check.report.results import CheckReport, GroupResult
from cuship.docs.documents import document_schemas
from cuship.provenance import PackageOrigin, Provenance
from cuship.ship import ShipReport
from cuship.wheel.audit import inspect_wheel
from tests.elf_factory import cuda_elf, fatbin, make_elf
from tests.jsondocs import BUILD, SHIP, schema_errors
from tests.wheel_factory import make_wheel

REGENERATE = "run: python -c 'import cuship.docs.documents as d; d.write_schemas()'"
TAG = "cp311-cp311-linux_x86_64"


def _wheel(directory: Path, version: str = "1.0+cu130") -> Path:
    extension = make_elf(
        needed=("libcudart.so.13", "libc10.so"),
        undefined=("cudaLaunchKernel", "_ZN3c106detail14torchCheckFailEv"),
        versioned=(("memcpy", "libc.so.6", "GLIBC_2.14"),),
        sections={".nv_fatbin": fatbin(sass=["90"], ptx=["90"])},
    )
    return make_wheel(
        directory,
        "demo",
        version,
        tag=TAG,
        extra_metadata="Requires-Dist: torch==2.9.*\nRequires-Dist: nvidia-cuda-runtime\n",
        files={
            "demo/_C.cpython-311-x86_64-linux-gnu.so": extension,
            "demo/libdemo.so": cuda_elf(sass=["80", "90a"], ptx=["90"], soname="libdemo.so"),
        },
    )


def _result(wheel: Path, *, full: bool) -> JobResult:
    return JobResult(
        job_id="demo-1.0-cp311-cu130",
        wheel=wheel,
        report=inspect_wheel(wheel),
        verify_problems=(),
        smoke=Smoke(said="cuda: ok", env="system-site", note="no pip") if full else None,
        seconds=12.345,
        python=Interpreter(version="3.11", full="3.11.9", executable="/py", source="uv")
        if full
        else None,
        nvcc=NvccCalls(calls=3, device=2, asked=("90",), compiled=("90",), rewritten=1)
        if full
        else None,
    )


def _outcomes(directory: Path) -> tuple[Outcome, ...]:
    built = _result(_wheel(directory / "out"), full=True)
    kept = _result(_wheel(directory / "out" / "failed", "1.0+cu128"), full=False)
    return (
        Outcome(job_id=built.job_id, status="built", detail=built.wheel.name, result=built),
        Outcome(job_id="demo-cu128", status="failed", detail="no sm_90", result=kept),
        Outcome(job_id="demo-cu126", status="failed", detail="nvcc exited 1"),
        Outcome(job_id="demo-arm64", status="needs-runner", detail="needs an arm64 runner"),
        Outcome(job_id="demo-torch2.8", status="collapsed", detail="same wheel as torch2.9"),
    )


def _check() -> CheckReport:
    origin = PackageOrigin(name="demo", file="/site/demo/__init__.py", origin="installed")
    return CheckReport(
        target="examples/cuvecops",
        device="cpu",
        seed=1,
        quick=True,
        started=1.0,
        finished=2.5,
        groups=(GroupResult(op="saxpy", engine="cuda", dtype="float32", rtol=0, atol=0),),
        provenance=Provenance(packages=(origin,), note=None),
        env=(("PYTHONPATH", "src"),),
    )


def _ship(tmp_path: Path, *, check: bool, indexed: bool, variants: bool = False) -> ShipReport:
    outcomes = _outcomes(tmp_path)
    site = tmp_path / "site"
    summary = index.write([tmp_path / "out"], site) if indexed else None
    return ShipReport(
        outcomes=outcomes,
        index=summary,
        site=site,
        stages={"plan": 0.123, "build": 30.0},
        check=_check() if check else None,
        torch_axis=("torch axis: collapsed",) if indexed else (),
        variants=("demo-1.0-cp311-cp311-linux_x86_64-cu130.whl",) if variants else (),
    )


def test_published_document_schemas_are_current(repo_root: Path) -> None:
    for name, schema in document_schemas().items():
        published = json.loads((repo_root / "src/cuship/schema" / name).read_text())
        assert published == schema, REGENERATE
        jsonschema.Draft202012Validator.check_schema(published)


def test_every_kind_of_build_outcome_follows_the_build_schema(tmp_path: Path) -> None:
    document = [o.to_json() for o in _outcomes(tmp_path)]
    assert {o["status"] for o in document} == {"built", "failed", "needs-runner", "collapsed"}
    assert [("report" in o) for o in document] == [True, True, False, False, False]
    assert schema_errors(BUILD, document) == []


@pytest.mark.parametrize(("check", "indexed"), [(True, True), (False, True), (False, False)])
def test_a_ship_report_follows_the_ship_schema(tmp_path: Path, check: bool, indexed: bool) -> None:
    document = _ship(tmp_path, check=check, indexed=indexed, variants=indexed).to_json("demo")
    assert (document["check"] is None) is not check
    assert (document["install"] is None) is not indexed
    assert schema_errors(SHIP, document) == []


def test_ship_json_names_the_project_in_its_install_lines(tmp_path: Path) -> None:
    report = _ship(tmp_path, check=False, indexed=True, variants=True)
    document: dict[str, Any] = report.to_json("demo")
    assert document["install"] == report.install_line("demo")
    assert document["install_variants"] == report.variants_line("demo")
    assert [i["project"] for i in document["installs"]] == ["demo"]
    assert [j["wheel"] is None for j in document["jobs"]] == [False, False, True, True, True]
    assert document["stages"] == {"plan": 0.12, "build": 30.0}


def _built(tmp_path: Path) -> dict[str, Any]:
    return _outcomes(tmp_path)[0].to_json()


def test_the_build_schema_refuses_a_missing_key_a_wrong_type_and_an_unknown_key(
    tmp_path: Path,
) -> None:
    good = _built(tmp_path)
    missing = {k: v for k, v in good.items() if k != "status"}
    wrong_type = {**good, "seconds": "12"}
    unknown = {**good, "report": {**good["report"], "color": "blue"}}
    half_result = {k: v for k, v in good.items() if k != "nvcc"}
    bad_enum = {**good, "status": "skipped"}
    for document in (missing, wrong_type, unknown, half_result, bad_enum):
        assert schema_errors(BUILD, [document]) != []


def test_the_ship_schema_refuses_a_missing_key_and_a_wrong_type(tmp_path: Path) -> None:
    good: dict[str, Any] = _ship(tmp_path, check=True, indexed=True).to_json("demo")
    missing = {k: v for k, v in good.items() if k != "installs"}
    wrong_type = {**good, "cpu_only": "no"}
    no_wheel = {**good, "jobs": [{k: v for k, v in good["jobs"][2].items() if k != "wheel"}]}
    for document in (missing, wrong_type, no_wheel):
        assert schema_errors(SHIP, document) != []


def _objects(schema: Any) -> list[dict[str, Any]]:
    """Every schema with ``properties`` inside ``schema``."""
    if isinstance(schema, list):
        return [found for item in schema for found in _objects(item)]
    if not isinstance(schema, dict):
        return []
    own = [schema] if "properties" in schema else []
    return own + [found for value in schema.values() for found in _objects(value)]


@pytest.mark.parametrize("name", [BUILD, SHIP])
def test_every_key_is_described_and_every_object_closed(name: str) -> None:
    for obj in _objects(document_schemas()[name]):
        assert obj["additionalProperties"] is False
        for key, sub in obj["properties"].items():
            assert sub.get("description"), f"{name}: {key} has no description"
