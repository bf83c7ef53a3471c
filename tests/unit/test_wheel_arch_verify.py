"""Arch lists as people write them, and the verify decision made from a report."""

from __future__ import annotations

import dataclasses
from fnmatch import fnmatchcase

import pytest

from cuship.arch import ArchTarget, parse_arch_list
from cuship.errors import UsageError
from cuship.judge.verify import verify
from cuship.wheel.audit import ObjectReport, WheelReport
from cuship.wheel.cudalibs import auditwheel_excludes, is_cuda_lib, library_stem


def test_torch_style_list() -> None:
    assert parse_arch_list("8.0;9.0;10.0;12.0+PTX").targets == (
        ArchTarget(sm="80"),
        ArchTarget(sm="90"),
        ArchTarget(sm="100"),
        ArchTarget(sm="120", ptx=True),
    )


@pytest.mark.parametrize(
    ("item", "target"),
    [
        ("90a", ArchTarget(sm="90a")),
        ("sm_90", ArchTarget(sm="90")),
        ("10.0f", ArchTarget(sm="100f")),
        ("9.0a+PTX", ArchTarget(sm="90a", ptx=True)),
        ("compute_120", ArchTarget(sm="120", sass=False, ptx=True)),
        ("7.5", ArchTarget(sm="75")),
    ],
)
def test_item_spellings(item: str, target: ArchTarget) -> None:
    assert parse_arch_list(item).targets == (target,)


def test_separators_and_errors() -> None:
    assert [t.sm for t in parse_arch_list(" 8.0 8.6, 9.0 ").targets] == ["80", "86", "90"]
    with pytest.raises(UsageError, match="not a GPU architecture: 'ampere'"):
        parse_arch_list("8.0;ampere")
    with pytest.raises(UsageError, match="empty architecture list"):
        parse_arch_list(" ; ")


def test_cuda_library_names() -> None:
    assert library_stem("pkg.libs/libcudart-1a2b3c4d.so.13") == "libcudart"
    assert is_cuda_lib("libcublasLt.so.13") and is_cuda_lib("libc10_cuda.so")
    assert is_cuda_lib("x.libs/libtorch_cpu-0badc0de.so") and is_cuda_lib("libcuda.so.1")
    assert not is_cuda_lib("libgomp-a34b3233.so.1") and not is_cuda_lib("libcudaplus.so")
    assert "libcudart.so*" in auditwheel_excludes() and "libcublas*.so*" in auditwheel_excludes()


OBJ = ObjectReport(
    path="pkg/_C.cpython-311-x86_64-linux-gnu.so",
    size=1,
    machine="EM_X86_64",
    soname=None,
    needed=("libcudart.so.13",),
    sass=("80", "90a", "100"),
    ptx=("120",),
    lto=(),
    ptx_compressed=True,
    sass_compressed=False,
    fatbin_size=1,
    entries=7,
    containers=2,
)
WHEEL = WheelReport(
    path="dist/pkg-0.1.0+cu130-cp311-cp311-linux_x86_64.whl",
    filename="pkg-0.1.0+cu130-cp311-cp311-linux_x86_64.whl",
    name="pkg",
    version="0.1.0+cu130",
    local="cu130",
    tags=("cp311-cp311-linux_x86_64",),
    size=1,
    extensions=(OBJ,),
    bundled_libs=(),
    bundled_cuda_libs=(),
)


def test_verify_passes_with_summary() -> None:
    result = verify(WHEEL, arches="8.0;9.0;10.0;compute_120", local="CU130")
    assert result.ok
    assert result.checks == (
        "SASS sm_80",
        "SASS sm_90",
        "SASS sm_100",
        "PTX compute_120",
        "no bundled CUDA/torch library",
        "local label 'CU130'",
    )


def test_verify_lists_everything_missing() -> None:
    bad = dataclasses.replace(
        WHEEL,
        bundled_libs=("pkg.libs/libcudart-1a2b3c4d.so.13",),
        bundled_cuda_libs=("pkg.libs/libcudart-1a2b3c4d.so.13",),
    )
    result = verify(bad, arches=["7.5", "9.0a", "10.0a", "12.0+PTX"], local="cu128")
    assert not result.ok
    assert result.problems == (
        "missing SASS for sm_75 (found: 80, 90a, 100)",
        "missing SASS for sm_100a (found: 80, 90a, 100)",
        "missing SASS for sm_120 (found: 80, 90a, 100)",
        "bundles 'pkg.libs/libcudart-1a2b3c4d.so.13'; "
        "repair with `cuship repair` (it excludes CUDA libraries)",
        "local version label is 'cu130', expected 'cu128'",
    )


def test_suffixed_ptx_does_not_stand_in_for_plain_ptx() -> None:
    obj = dataclasses.replace(OBJ, ptx=("90a",))
    assert verify(obj, arches="9.0+PTX").problems == ("missing PTX for compute_90 (found: 90a)",)


def test_no_device_code_is_a_failure() -> None:
    empty = dataclasses.replace(OBJ, sass=(), ptx=())
    (problem,) = verify(empty, arches="8.0").problems
    assert problem.startswith(
        "no CUDA device code (no .nv_fatbin SASS or PTX) in any shared object"
    )
    assert "device_code = false" in problem, "the fix for a package with none to build"
    assert "is not a wheel" in verify(OBJ, local="cu130").problems[0]


def test_repair_plan_excludes_every_cuda_library() -> None:
    from pathlib import Path

    from cuship.wheel.write.repair import plan_repair

    plan = plan_repair(Path("dist/x.whl"), Path("out"), plat="manylinux_2_28_x86_64", python="py")
    assert plan.argv[:8] == (
        "py",
        "-m",
        "auditwheel",
        "repair",
        "-w",
        "out",
        "--plat",
        "manylinux_2_28_x86_64",
    )
    excludes = [plan.argv[i + 1] for i, arg in enumerate(plan.argv) if arg == "--exclude"]
    assert excludes == list(auditwheel_excludes()) and plan.argv[-1] == "dist/x.whl"
    for soname in (
        "libcuda.so.1",
        "libcudart.so.13",
        "libcublasLt.so.13",
        "libnvJitLink.so.13",
        "libc10.so",
    ):
        assert any(fnmatchcase(soname, pattern) for pattern in excludes), soname
