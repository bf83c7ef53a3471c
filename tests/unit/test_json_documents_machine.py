"""The ``--json`` documents of the commands about this machine (doctor, env, resolve, install,
inspect, verify, compat, matrix) follow their published JSON Schemas: documents made from real
library objects (a fake machine's fingerprint, a fake site's distributions, a real index of real
wheels) pass, and a key missing, a wrong type or an unknown key fails."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cuship import index, settings
from cuship.compat import load
from cuship.config import load_config
from cuship.docs.documents import document_schemas, schema_file
from cuship.doctor import DoctorReport, diagnose
from cuship.index.describe import describe_wheel
from cuship.judge.verify import verify
from cuship.machine import Fingerprint, Toolkit, fingerprint
from cuship.matrix import expand
from cuship.resolve.install import IndexResolution, plan_install, resolve_index, target_from_env
from cuship.wheel.audit import inspect_path
from tests.elf_factory import cuda_elf, make_elf
from tests.jsondocs import schema_errors
from tests.site_factory import install
from tests.unit.test_json_documents import _objects
from tests.wheel_factory import make_wheel

DOCTOR, ENV, RESOLVE, INSTALL = (schema_file(s) for s in ("doctor", "env", "resolve", "install"))
INSPECT, VERIFY, COMPAT, MATRIX = (
    schema_file(s) for s in ("inspect", "verify", "compat", "matrix")
)
EXT = "pkg/_C.cpython-311-x86_64-linux-gnu.so"
MACHINE = {
    settings.GPUS: "H100:9.0:80GiB,A100",
    settings.CUDA_DRIVER_VERSION: "580.65.06",
    settings.TORCH: "2.8.0+cu128",
    settings.TORCH_CXX11ABI: "1",
    settings.CUDA_LIBS: "12,13",
    settings.NVCC: "none",
    "PATH": "/nonexistent",
}
NO_GPU = {**MACHINE, settings.GPUS: "none", settings.TORCH: "none", settings.CUDA_LIBS: "none"}
del NO_GPU[settings.CUDA_DRIVER_VERSION]


def _machine(environ: dict[str, str]) -> Fingerprint:
    return fingerprint(environ, toolkit=False)


def _doctor(site: Path, environ: dict[str, str] = MACHINE) -> DoctorReport:
    install(site, "pkg", "1.0+cu130", files={EXT: cuda_elf(sass=["80"], ptx=["80"])})
    torch_ext = make_elf(needed=("libc10.so",), undefined=("_ZN3c106detail14torchCheckFailEv",))
    install(site, "tpkg", "2.0", files={"tpkg/_C.so": torch_ext})
    return diagnose(paths=[site], machine=_machine(environ))


@pytest.mark.parametrize("environ", [MACHINE, NO_GPU])
def test_a_doctor_report_follows_the_doctor_schema(tmp_path: Path, environ: dict[str, str]) -> None:
    document: Any = _doctor(tmp_path, environ).to_json()
    assert document["machine"]["driver_version"] == environ.get(settings.CUDA_DRIVER_VERSION)
    assert len(document["packages"]) == 2
    assert schema_errors(DOCTOR, document) == []


@pytest.mark.parametrize("environ", [MACHINE, NO_GPU])
def test_a_fingerprint_follows_the_env_schema(environ: dict[str, str]) -> None:
    document = fingerprint(environ).to_json()
    assert document["toolkit"] is None
    assert schema_errors(ENV, document) == []


def test_a_fingerprint_with_a_toolkit_and_no_library_search_follows_the_env_schema() -> None:
    toolkit = Toolkit(version="13.0", nvcc="/cuda/bin/nvcc", cuda_home=None)
    changed = replace(_machine(MACHINE), toolkit=toolkit)
    assert schema_errors(ENV, replace(changed, cuda_libs=None).to_json()) == []


def _wheel(directory: Path, version: str, sass: list[str], ptx: list[str]) -> Path:
    extension = cuda_elf(sass=sass, ptx=ptx, needed=("libcudart.so.13",))
    return make_wheel(
        directory,
        "pkg",
        version,
        tag="py3-none-any",
        files={"pkg/_C.so": extension},
    )


def _resolved(tmp_path: Path, environ: dict[str, str] = MACHINE) -> IndexResolution:
    wheels = tmp_path / "wheels"
    _wheel(wheels, "1.0+cu130", ["80", "90"], ["90"])
    _wheel(wheels, "1.0+cu129", ["75"], [])  # no kernel image for an H100
    index.write([wheels], tmp_path / "site", describe=describe_wheel)
    target = target_from_env(environ)
    return resolve_index("pkg", (tmp_path / "site" / "simple").as_uri(), target)


@pytest.mark.parametrize("environ", [MACHINE, NO_GPU])
def test_a_resolution_follows_the_resolve_schema(tmp_path: Path, environ: dict[str, str]) -> None:
    resolved = _resolved(tmp_path, environ)
    document: Any = resolved.to_json()
    assert document["index"] == resolved.page.url
    if environ is MACHINE:
        assert document["chosen"]["filename"] == "pkg-1.0+cu130-py3-none-any.whl"
        assert [v["filename"] for v in document["rejected"]] == ["pkg-1.0+cu129-py3-none-any.whl"]
    assert schema_errors(RESOLVE, document) == []


@pytest.mark.parametrize("dry_run", [True, False])
def test_an_install_plan_follows_the_install_schema(tmp_path: Path, dry_run: bool) -> None:
    resolution = _resolved(tmp_path).resolution
    assert resolution.chosen is not None
    plan = plan_install(
        resolution,
        installer="uv",
        python="/venv/bin/python",
        index="http://127.0.0.1/simple",
        dest=tmp_path / "dl",
        dry_run=dry_run,
    )
    document: Any = plan.to_json()
    assert document["dry_run"] is dry_run
    assert schema_errors(INSTALL, document) == []


def _built(tmp_path: Path) -> Path:
    return make_wheel(
        tmp_path,
        "demo",
        "1.0+cu130",
        tag="cp311-cp311-linux_x86_64",
        extra_metadata="Requires-Dist: torch==2.9.*\n",
        files={"demo/_C.so": cuda_elf(sass=["90"], ptx=["90a"], needed=("libc10.so",))},
    )


def test_a_wheel_and_a_shared_object_follow_the_inspect_schema(tmp_path: Path) -> None:
    wheel = _built(tmp_path)
    so = tmp_path / "libdemo.so"
    so.write_bytes(cuda_elf(sass=["80"], ptx=["80"], soname="libdemo.so"))
    for target in (wheel, so):
        assert schema_errors(INSPECT, inspect_path(target).to_json()) == []


def test_a_verify_result_follows_the_verify_schema(tmp_path: Path) -> None:
    report = inspect_path(_built(tmp_path))
    for arches in ("9.0+PTX", "8.0;9.0a+PTX"):
        result = verify(report, arches=arches, local="cu130", manylinux="2_28")
        assert schema_errors(VERIFY, result.to_json()) == []
    assert not verify(report, arches="8.0").ok


@pytest.mark.parametrize("sections", [("cuda", "torch", "gpus"), ("torch",), ("gpus", "cuda")])
def test_the_compat_data_follows_the_compat_schema(sections: tuple[Any, ...]) -> None:
    document = load().to_json(sections)
    assert sorted(document) == sorted(sections)
    assert schema_errors(COMPAT, document) == []


def test_a_matrix_with_pruned_combinations_and_dropped_archs_follows_the_matrix_schema(
    tmp_path: Path,
) -> None:
    (tmp_path / "cuship.toml").write_text(
        '[project]\nname = "demo"\nversion = "1.0"\n[matrix]\n'
        'python = ["3.11", "3.12"]\ncuda = ["12.8.1", "13.0.2"]\ntorch = ["2.8", "2.9"]\n'
        'arch = "7.0;9.0+PTX"\n',
        encoding="utf-8",
    )
    matrix = expand(load_config(tmp_path), load())
    assert matrix.pruned and matrix.arch_drops
    assert schema_errors(MATRIX, matrix.to_json()) == []
    half = matrix.shard(1, 2)
    assert len(half.jobs) == (len(matrix.jobs) + 1) // 2
    assert schema_errors(MATRIX, half.to_json()) == []


def _bad(good: dict[str, Any], key: str, wrong: object) -> list[dict[str, Any]]:
    """``good`` with ``key`` missing, ``key`` of a wrong type, and an unknown key."""
    missing = {k: v for k, v in good.items() if k != key}
    return [missing, {**good, key: wrong}, {**good, "colour": "blue"}]


def _replaced(document: Any, path: tuple[Any, ...], part: Any) -> Any:
    """``document`` with the value at ``path`` (keys and list indexes) replaced by ``part``."""
    if not path:
        return part
    head, rest = path[0], path[1:]
    if isinstance(document, list):
        return [_replaced(v, rest, part) if i == head else v for i, v in enumerate(document)]
    return {**document, head: _replaced(document[head], rest, part)}


def _at(document: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        document = document[step]
    return document


def test_each_schema_refuses_a_missing_key_a_wrong_type_and_an_unknown_key(tmp_path: Path) -> None:
    doctor: Any = _doctor(tmp_path / "site").to_json()
    resolved: Any = _resolved(tmp_path / "index").to_json()
    verified = verify(inspect_path(_built(tmp_path)), arches="9.0").to_json()
    matrix = expand(load_config(_example(tmp_path)), load()).to_json()
    cases: list[tuple[str, Any, tuple[Any, ...], str, object]] = [
        (DOCTOR, doctor, (), "machine", "H100"),
        (DOCTOR, doctor, ("packages", 0), "gpus", {}),
        (DOCTOR, doctor, ("machine",), "driver_version", 580),
        (ENV, fingerprint(MACHINE).to_json(), (), "driver_version", 580),
        (RESOLVE, resolved, (), "index", None),
        (RESOLVE, resolved, ("target",), "driver_version", 580),
        (VERIFY, verified, (), "ok", "yes"),
        (COMPAT, load().to_json(), ("gpus", 0), "cc", 9.0),
        (MATRIX, matrix, (), "jobs", 1),
        (MATRIX, matrix, ("jobs", 0), "cxx11abi", "TRUE"),
    ]
    for name, whole, path, key, wrong in cases:
        for part in _bad(_at(whole, path), key, wrong):
            assert schema_errors(name, _replaced(whole, path, part)) != [], (name, path, key)


def _example(tmp_path: Path) -> Path:
    (tmp_path / "cuship.toml").write_text(
        '[project]\nname = "demo"\nversion = "1.0"\n[matrix]\npython = ["3.12"]\n'
        'cuda = ["13.0.2"]\narch = "9.0"\n',
        encoding="utf-8",
    )
    return tmp_path


def test_driver_version_is_one_name_in_doctor_env_and_resolve(tmp_path: Path) -> None:
    doctor: Any = _doctor(tmp_path / "site").to_json()
    resolved: Any = _resolved(tmp_path / "index").to_json()
    env = fingerprint(MACHINE).to_json()
    for machine in (doctor["machine"], resolved["target"], env):
        assert machine["driver_version"] == "580.65.06"
        assert "driver" not in machine


@pytest.mark.parametrize("name", [DOCTOR, ENV, RESOLVE, INSTALL, INSPECT, VERIFY, COMPAT, MATRIX])
def test_every_key_is_described_and_every_object_closed(name: str) -> None:
    for obj in _objects(document_schemas()[name]):
        assert obj["additionalProperties"] is False
        for key, sub in obj["properties"].items():
            assert sub.get("description"), f"{name}: {key} has no description"
