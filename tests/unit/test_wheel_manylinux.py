"""The glibc floor: a wheel tagged above it fails verification naming the symbols that raise the
tag; the versioned imports are read from .gnu.version_r and .gnu.version; a job's floor is
enforced only when [build] manylinux sets it."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import pytest
from packaging.version import Version

from cuship.builder.glibc import glibc_floor
from cuship.compat import load
from cuship.config import BuildSection, load_config
from cuship.errors import ConfigError, UsageError
from cuship.judge.verify import verify
from cuship.matrix import BuildJob, jobs_with_configs
from cuship.wheel.audit import inspect_wheel
from cuship.wheel.manylinux import floor_problem, offenders, parse_floor, tag_glibc
from cuship.wheel.read.elf import VersionNeed, quick_facts
from tests.elf_factory import make_elf
from tests.elf_oracle import elf_facts
from tests.wheel_factory import make_wheel

NEW_GLIBC = [
    ("pthread_create", "libc.so.6", "GLIBC_2.34"),
    ("dlopen", "libc.so.6", "GLIBC_2.34"),
    ("memcpy", "libc.so.6", "GLIBC_2.14"),
    ("_ZdlPvm", "libstdc++.so.6", "CXXABI_1.3.9"),
]
SO = "fastops/_ops.cpython-311-x86_64-linux-gnu.so"


def _wheel(tmp_path: Path, tag: str, versioned: list[tuple[str, str, str]]) -> Path:
    so = make_elf(needed=["libc.so.6", "libstdc++.so.6"], versioned=versioned)
    return make_wheel(tmp_path, "fastops", "1.0", tag=f"cp311-cp311-{tag}", files={SO: so})


@pytest.mark.parametrize(("bits", "endian"), [(64, "<"), (64, ">"), (32, "<"), (32, ">")])
def test_the_elf_reader_groups_imported_symbols_by_the_version_they_need(
    bits: int, endian: str
) -> None:
    data = make_elf(undefined=["plain"], versioned=NEW_GLIBC, bits=bits, endian=endian)
    facts = quick_facts(data, source="x.so")
    assert facts.versions == (
        VersionNeed(
            library="libc.so.6", version="GLIBC_2.34", symbols=("dlopen", "pthread_create")
        ),
        VersionNeed(library="libc.so.6", version="GLIBC_2.14", symbols=("memcpy",)),
        VersionNeed(library="libstdc++.so.6", version="CXXABI_1.3.9", symbols=("_ZdlPvm",)),
    )
    assert "plain" in facts.undefined and "pthread_create" in facts.undefined


@pytest.mark.parametrize(("bits", "endian"), [(64, "<"), (32, ">")])
def test_the_struct_reader_reads_the_same_versions(bits: int, endian: str) -> None:
    data = make_elf(
        undefined=["plain"],
        versioned=NEW_GLIBC,
        sections={".nv_fatbin": b"\0" * 16},
        bits=bits,
        endian=endian,
    )
    slow = elf_facts(io.BytesIO(data), source="x.so", wanted=[".nv_fatbin"])
    assert quick_facts(data, source="x.so", wanted=[".nv_fatbin"]) == slow
    assert len(slow.versions) == 3
    assert quick_facts(data, source="x.so", symbols=False).versions == ()


def test_an_object_without_version_sections_needs_no_version() -> None:
    assert quick_facts(make_elf(undefined=["f"]), source="x.so").versions == ()


def test_a_wheel_tagged_above_the_floor_fails_naming_the_symbols_and_the_fix(
    tmp_path: Path,
) -> None:
    report = inspect_wheel(_wheel(tmp_path, "manylinux_2_34_x86_64", NEW_GLIBC))
    result = verify(report, manylinux="2_28")
    assert not result.ok
    (problem,) = result.problems
    assert "manylinux_2_34 needs glibc 2.34" in problem
    assert "above the glibc floor manylinux_2_28" in problem
    assert f"GLIBC_2.34 (dlopen, pthread_create) in {SO}" in problem
    assert "GLIBC_2.14" not in problem and "CXXABI" not in problem  # both within 2_28
    assert "--mode container" in problem and '[build] manylinux = "2_34"' in problem
    assert "glibc floor manylinux_2_28" in result.checks


def test_a_wheel_within_the_floor_passes(tmp_path: Path) -> None:
    report = inspect_wheel(_wheel(tmp_path, "manylinux_2_34_x86_64", NEW_GLIBC))
    assert verify(report, manylinux="2_34").ok
    older = inspect_wheel(_wheel(tmp_path / "old", "manylinux_2_17_x86_64", NEW_GLIBC[2:3]))
    assert verify(older, manylinux="2_28").ok
    assert floor_problem(older, (2, 17)) is None


def test_libstdcxx_versions_are_judged_by_auditwheels_policy(tmp_path: Path) -> None:
    report = inspect_wheel(_wheel(tmp_path, "manylinux_2_24_x86_64", NEW_GLIBC[2:]))
    found = offenders(report, (2, 17))
    assert [o.need.version for o in found] == ["CXXABI_1.3.9"]  # manylinux2014 stops at 1.3.7
    problem = floor_problem(report, (2, 17))
    assert problem is not None and "CXXABI_1.3.9 (_ZdlPvm)" in problem


def test_a_wheel_without_a_manylinux_tag_fails_only_on_symbols_above_the_floor(
    tmp_path: Path,
) -> None:
    raw = inspect_wheel(_wheel(tmp_path, "linux_x86_64", NEW_GLIBC))
    problem = floor_problem(raw, (2, 28))
    assert problem is not None and "it has no manylinux tag" in problem
    assert floor_problem(raw, (2, 34)) is None


def test_tags_and_floors_are_read_as_pep_600_says() -> None:
    assert tag_glibc(["cp311-cp311-manylinux_2_34_x86_64"]) == ((2, 34), "x86_64")
    legacy = ["cp311-cp311-manylinux2014_x86_64", "cp311-cp311-manylinux_2_17_x86_64"]
    assert tag_glibc(legacy) == ((2, 17), "x86_64")
    assert tag_glibc(["py3-none-any"]) is None
    assert parse_floor("2_28") == (2, 28) == parse_floor("manylinux_2_28")
    with pytest.raises(UsageError) as caught:
        parse_floor("2.28")
    assert caught.value.exit_code == 2 and '"2_28"' in str(caught.value)


def test_verify_of_a_bare_object_refuses_a_floor(tmp_path: Path) -> None:
    from cuship.wheel.audit import inspect_object

    path = tmp_path / "x.so"
    path.write_bytes(make_elf(versioned=NEW_GLIBC))
    result = verify(inspect_object(path), manylinux="2_28")
    assert result.problems == (f"--manylinux '2_28' given, but {str(path)!r} is not a wheel",)


def _job(torch: str | None) -> BuildJob:
    example = Path(__file__).resolve().parents[2] / "examples" / "cuvecops"
    _, job = next(iter(jobs_with_configs(load_config(example), load())))
    return dataclasses.replace(job, torch=Version(torch) if torch else None)


def test_a_jobs_floor_is_enforced_only_when_the_config_sets_it() -> None:
    explicit = glibc_floor(_job(None), BuildSection(manylinux="2_17"))
    assert (explicit.floor, explicit.enforced) == ("2_17", True)
    torch = glibc_floor(_job("2.9"), BuildSection())
    assert (torch.floor, torch.enforced) == ("2_28", False)
    assert "torch 2.9" in torch.why
    old_torch = glibc_floor(_job("2.5"), BuildSection())  # manylinux1 wheels: no floor recorded
    assert (old_torch.floor, old_torch.enforced, old_torch.why) == (
        "2_28",
        False,
        "cuship's default floor",
    )


@pytest.mark.parametrize(
    ("line", "key"),
    [('manylinux = "2.28"', "build.manylinux"), ('toolkits = "download"', "build.toolkits")],
)
def test_a_bad_floor_or_toolkit_source_in_the_config_names_its_key(
    tmp_path: Path, line: str, key: str
) -> None:
    (tmp_path / "cuship.toml").write_text(f'[project]\nname = "x"\n[build]\n{line}\n')
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert caught.value.exit_code == 2 and key in str(caught.value)
