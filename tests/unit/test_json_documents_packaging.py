"""The packaging commands' ``--json`` documents follow their published JSON Schemas: documents
made from real library objects (a real index written, a wheel retagged and twinned, a key made,
an attestation signed and verified, CI files written, runs stored) pass, and a document with
a key missing, an unknown key or a wrong type fails."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from cuship import index
from cuship.attest import keygen, load_signing_key, load_verify_key, verify
from cuship.attest.run import attest_files
from cuship.ci import plan_ci, write_ci
from cuship.compat import load
from cuship.config import load_config
from cuship.docs.documents import document_schemas, packaging, schema_file
from cuship.judge.variants import variant_file
from cuship.store import ResultRow, RunRecord, Store
from cuship.store.read import load_runs
from cuship.toolkit import Installed, InstallResult, WheelFile, catalog
from cuship.toolkit.cache import listing
from cuship.wheel.audit import inspect_wheel
from cuship.wheel.write.repair import RepairResult
from cuship.wheel.write.retag import retag_file
from tests.elf_factory import cuda_elf
from tests.jsondocs import schema_errors
from tests.wheel_factory import make_wheel

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cuvecops"
NAMES = [schema_file(stem) for stem in packaging.DOCUMENTS]


def _cuda_wheel(directory: Path, version: str = "1.0+cu130") -> Path:
    library = cuda_elf(sass=["80", "90"], ptx=["90"], needed=("libcudart.so.13",))
    return make_wheel(
        directory,
        "demo",
        version,
        tag="cp311-cp311-linux_x86_64",
        files={"demo/_C.cpython-311-x86_64-linux-gnu.so": library},
    )


def test_an_index_written_and_updated_follows_the_index_schema(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    _cuda_wheel(wheels)
    (wheels / "README.md").write_text("notes")
    (wheels / "broken-1.0-py3-none-any.whl").write_bytes(b"not a zip")
    first = index.write([wheels], tmp_path / "site", base_url="https://example.org/w/")
    assert first.rewritten is None and len(first.bad_wheels) == 1
    make_wheel(tmp_path / "later", "other", "2.0")
    later = index.write([tmp_path / "later"], tmp_path / "site", keep_existing=True)
    assert later.rewritten is not None and later.kept == 1
    for summary in (first, later):
        assert schema_errors(schema_file("index"), summary.to_json()) == []


def test_wheel_tools_follow_their_schemas(tmp_path: Path) -> None:
    wheel = _cuda_wheel(tmp_path / "in", "1.0")
    retagged = retag_file(wheel, local="cu130", out_dir=tmp_path / "retag")
    assert schema_errors(schema_file("retag"), retagged.to_json()) == []
    for null in (False, True):
        twin = variant_file(retagged.output, out_dir=tmp_path / f"v{null}", null=null)
        assert schema_errors(schema_file("variant"), twin.to_json()) == [], null
    repaired = RepairResult(
        wheel=wheel,
        output=retagged.output,
        report=inspect_wheel(retagged.output),
        excluded_needed=("libcudart.so.13",),
        log="",
    )
    assert schema_errors(schema_file("repair"), repaired.to_json()) == []


def _installed(root: Path) -> Installed:
    release = catalog().releases[0]
    files = tuple(
        WheelFile(filename=f"{name}-{v}.whl", url=f"https://x/{name}", sha256="0" * 64, size=9)
        for name, v in release.wheels.items()
    )
    return Installed(
        prefix=root / str(release.cuda),
        cuda=str(release.cuda),
        nvcc_version=str(release.nvcc),
        index="https://pypi.org/simple",
        wheels=files,
        assembled="2025-01-01T00:00:00Z",
    )


def test_the_toolkit_documents_follow_their_schemas(tmp_path: Path) -> None:
    installed = _installed(tmp_path)
    result = InstallResult(installed=installed, reused=False, downloaded_bytes=10, seconds=1.5)
    assert schema_errors(schema_file("toolkit-install"), result.to_json()) == []
    listed = listing(catalog(), tmp_path / "empty").to_json()
    assert listed["unavailable"] and schema_errors(schema_file("toolkit-list"), listed) == []


def test_keys_and_attestations_follow_their_schemas(tmp_path: Path) -> None:
    pair = keygen(tmp_path / "keys" / "signing")
    assert schema_errors(schema_file("keygen"), pair.to_json()) == []
    wheel = _cuda_wheel(tmp_path / "in")
    signed = attest_files([wheel], load_signing_key(pair.private), environ={}, machine=dict)
    assert schema_errors(schema_file("attest"), signed.to_json()) == []
    key = load_verify_key(pair.public)
    (envelope,) = signed.envelopes
    held = verify(envelope, key=key, files=[wheel])
    other = make_wheel(tmp_path / "other", "other", "1.0")
    failed = verify(envelope, key=key, files=[other])
    assert held.ok and not failed.ok
    for checked in (held, failed):
        assert schema_errors(schema_file("verify-attestation"), checked.to_json()) == []


def test_ci_files_written_follow_the_ci_init_schema(tmp_path: Path) -> None:
    plan = plan_ci(
        load_config(EXAMPLE),
        load(),
        ("github", "gitlab"),
        out_dir=tmp_path,
        cuship=("cuship[all]==0.1.0",),  # this checkout's editable cuship pins nothing
    )
    done = write_ci(plan)
    assert len(done.written) >= 2
    assert schema_errors(schema_file("ci-init"), done.to_json()) == []


def test_stored_runs_follow_the_report_schema(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    run = RunRecord(
        kind="check",
        started=100.0,
        finished=None,
        fingerprint={"python": "3.11"},
        cuship_version="0.1.0",
        project="demo",
        verdict=None,
        meta={"seed": 3},
    )
    rows = [
        ResultRow(key="saxpy/native/float32", status="passed", payload={"cases": [1]},
                  numbers={"max_abs": 1e-7, "max_rel": float("inf")}),
        ResultRow(key="softmax/native/float32", status=None, payload={}),
    ]  # fmt: skip
    with Store.open(path) as store:
        store.record(run, rows)
        store.record(dataclasses.replace(run, kind="bench", verdict="passed"), [])
    document = [stored.to_json() for stored in load_runs(path)]
    assert {d["kind"] for d in document} == {"check", "bench"}
    assert schema_errors(schema_file("report"), document) == []


def test_ship_describes_its_index_as_cuship_index_does() -> None:
    schemas = document_schemas()
    shipped = schemas[schema_file("ship")]["properties"]["index"]["anyOf"][0]
    published = schemas[schema_file("index")]
    assert shipped == {k: published[k] for k in ("type", "properties", "required")} | {
        "additionalProperties": False
    }


def _good(tmp_path: Path) -> dict[str, Any]:
    make_wheel(tmp_path / "w", "demo", "1.0")
    return index.write([tmp_path / "w"], tmp_path / "site").to_json()


def test_the_index_schema_refuses_a_missing_key_an_unknown_key_and_a_wrong_type(
    tmp_path: Path,
) -> None:
    good = _good(tmp_path)
    assert schema_errors(schema_file("index"), good) == []
    skipped = {"path": "x", "reason": "y", "bad_wheel": True, "why": "z"}
    for document in (
        {k: v for k, v in good.items() if k != "wheels"},
        {**good, "colour": "blue"},
        {**good, "skipped": [skipped]},
        {**good, "hashed": "1"},
        {**good, "rewritten": -1},
    ):
        assert schema_errors(schema_file("index"), document) != []


def test_the_other_schemas_refuse_a_wrong_document(tmp_path: Path) -> None:
    pair = keygen(tmp_path / "k").to_json()
    assert schema_errors(schema_file("keygen"), {**pair, "mode": "0600"}) != []
    assert schema_errors(schema_file("attest"), {**pair, "predicate": "build"}) != []
    signed = {"keyid": "k", "predicate": "deploy", "envelopes": []}
    assert schema_errors(schema_file("attest"), signed) != []
    assert schema_errors(schema_file("retag"), {"input": "a.whl"}) != []
    assert schema_errors(schema_file("ci-init"), {"written": "a", "project": "."}) != []
    assert schema_errors(schema_file("report"), [{"id": 1}]) != []


def _objects(schema: Any) -> list[dict[str, Any]]:
    if isinstance(schema, list):
        return [found for item in schema for found in _objects(item)]
    if not isinstance(schema, dict):
        return []
    own = [schema] if "properties" in schema else []
    return own + [found for value in schema.values() for found in _objects(value)]


@pytest.mark.parametrize("name", NAMES)
def test_every_key_is_described_and_every_object_closed(name: str) -> None:
    for obj in _objects(document_schemas()[name]):
        assert obj["additionalProperties"] is False
        for key, sub in obj["properties"].items():
            assert sub.get("description"), f"{name}: {key} has no description"
