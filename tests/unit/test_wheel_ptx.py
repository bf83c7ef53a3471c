"""Which GPUs a shared object's PTX can serve (plain, arch-specific, family PTX), what
``cuship verify`` and ``cuship doctor`` say of it, and the example's arch list."""

from __future__ import annotations

from pathlib import Path

from cuship.arch import parse_arch_list
from cuship.cli.doctor import render as render_doctor
from cuship.config import load_config
from cuship.doctor import diagnose
from cuship.judge.ptx import jit_arch, reach, reach_lines
from cuship.judge.verify import verify
from cuship.machine import fingerprint
from tests.elf_factory import cuda_elf
from tests.object_reports import object_report
from tests.site_factory import install

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cuvecops"


# --- which GPUs PTX serves ----------------------------------------------------------------------


def test_plain_ptx_serves_every_newer_gpu_and_arch_specific_ptx_only_its_own() -> None:
    assert reach("80").line() == (
        "PTX compute_80: JIT on any GPU of compute capability >= 8.0 "
        "(the driver must support the CUDA toolkit that made it)"
    )
    assert reach("compute_90a").serves == (
        "only GPUs of compute capability 9.0 (arch-specific PTX)"
    )
    assert reach("100f").serves == ("GPUs of compute capability 10.x >= 10.0 (family-specific PTX)")
    assert [reach("90a").runs_on(cc) for cc in ("8.0", "9.0", "10.0")] == [False, True, False]
    assert [reach("100f").runs_on(cc) for cc in ("10.0", "10.3", "12.0")] == [True, True, False]
    assert [reach("80").runs_on(cc) for cc in ("7.5", "8.0", "9.0", "12.0")] == [
        False,
        True,
        True,
        True,
    ]


def test_a_gpu_jits_the_newest_ptx_it_can() -> None:
    assert jit_arch("8.9", ("80", "86", "120")) == "86"
    assert jit_arch("9.0", ("80", "90a")) == "90a"
    assert jit_arch("9.0", ("120",)) is None
    assert reach_lines(()) == ("no PTX: runs only on GPUs its SASS covers; no GPU can JIT it",)


def test_the_example_ships_ptx_a_9_0_gpu_can_jit() -> None:
    """Its arch list gives PTX for compute_80 (a 9.0 GPU JITs it under forced PTX JIT), not
    only compute_120 (which left the H100 with 'no kernel image')."""
    (arch,) = load_config(EXAMPLE).matrix.arch
    spec = parse_arch_list(arch)
    assert spec.ptx == ("80", "120")
    assert spec.cmake == "80;90-real;100-real;120"
    assert jit_arch("9.0", spec.ptx) == "80"


# --- verify and doctor --------------------------------------------------------------------------


def test_verify_says_which_gpus_the_ptx_serves() -> None:
    result = verify(object_report(sass=("90",), ptx=("120", "80")), arches="9.0")
    assert result.ptx_lines() == (reach("80").line(), reach("120").line())
    assert [p["arch"] for p in result.to_json()["ptx"]] == ["compute_80", "compute_120"]
    assert result.to_json()["ptx"][0]["serves"] == "any GPU of compute capability >= 8.0"
    assert verify(object_report(sass=("90",)), arches="9.0").ptx_lines() == reach_lines(())
    host = verify(object_report(), arches="")
    assert (host.ptx_lines(), host.to_json()["ptx"]) == ((), [])


def test_doctor_says_which_gpus_each_package_ptx_serves(tmp_path: Path) -> None:
    install(tmp_path, "pkg", "1.0", files={"pkg/_C.so": cuda_elf(sass=["90"], ptx=["90a"])})
    machine = fingerprint({"CUSHIP_GPUS": "H100:9.0:80GiB", "PATH": "/nonexistent"}, toolkit=False)
    report = diagnose(["pkg"], paths=[tmp_path], machine=machine)
    (package,) = report.packages
    assert package.to_json()["ptx_reach"] == [reach("90a").to_json()]
    assert f"  ptx      {reach('90a').line()}" in render_doctor(report).splitlines()
