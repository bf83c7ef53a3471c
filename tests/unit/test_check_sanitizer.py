"""compute-sanitizer reports read back: outputs recorded on an H100 over three planted bugs and
a clean kernel (tests/fixtures/h100/, made from planted.cu there)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuship.check.sanitize.parse import parse

H100 = Path(__file__).resolve().parents[1] / "fixtures" / "h100"


def _report(name: str) -> str:
    return (H100 / f"sanitizer-{name}.txt").read_text()


def test_memcheck_out_of_bounds_write_names_kernel_line_and_thread() -> None:
    report = parse(_report("memcheck-oob"))
    assert report.errors == 4 and not report.clean
    first = report.findings[0]
    assert first.kind == "Invalid __global__ write of size 4 bytes"
    assert (first.kernel, first.where) == ("oob_write(float *, int)", "planted.cu:8")
    assert (first.thread, first.block) == ("232,0,0", "3,0,0")
    assert "Access to 0x7fc5d0800fa0 is out of bounds" in first.lines
    # the launch failure it caused, seen at three API calls: no device code to name
    api = report.findings[1:]
    assert len(api) == 3 and all(f.kernel is None for f in api)
    assert all(f.kind.startswith("Program hit cudaErrorLaunchFailure (error 719)") for f in api)
    assert report.kernels() == ("oob_write",)


def test_racecheck_shared_memory_race_with_both_accesses_and_hazards() -> None:
    report = parse(_report("racecheck-race"))
    assert (report.errors, report.warnings) == (1, 0) and not report.clean
    (race,) = report.findings
    assert race.kind.startswith("Error: Race reported between Write access")
    assert (race.kernel, race.where) == ("shared_race(float *)", "planted.cu:13")
    assert race.lines[1].startswith(
        "and Read access at shared_race(float *)+0x1e0 in planted.cu:15"
    )
    assert race.hazards == 1024


def test_initcheck_uninitialised_reads_past_the_print_limit() -> None:
    report = parse(_report("initcheck-uninit"))
    assert report.errors == 1000 and report.not_printed == 980
    assert len(report.findings) == 20
    assert {f.where for f in report.findings} == {"planted.cu:20"}
    assert report.kernels() == ("uninit_read",)
    assert report.findings[0].kind == "Uninitialized __global__ memory read of size 4 bytes"


@pytest.mark.parametrize("tool", ["memcheck", "racecheck", "initcheck", "synccheck"])
def test_a_clean_kernel_is_clean_under_every_tool(tool: str) -> None:
    report = parse(_report(f"{tool}-clean"))
    assert report.clean and report.errors == 0 and report.kernels() == ()


def test_program_output_and_a_missing_summary() -> None:
    report = parse("hello from the program\n========= COMPUTE-SANITIZER\n")
    assert report.findings == () and report.errors is None and not report.clean


# --- Numba kernels (tests/fixtures/planted_sanitize), recorded the same way -----------------


def test_a_numba_kernel_is_named_without_its_abi_tag() -> None:
    report = parse(_report("numba-memcheck-oob"))
    first = report.findings[0]
    assert first.kind == "Invalid __global__ write of size 4 bytes"
    assert first.kernel is not None and first.kernel.startswith(
        "planted_kernels::oob_write[abi:v1,"
    )
    assert first.kernel_name == "planted_kernels::oob_write"
    assert (first.thread, first.block) == ("232,0,0", "3,0,0")
    assert "Host Frame: oob in checks.py:44" in first.lines
    assert report.kernels() == ("planted_kernels::oob_write",) and report.errors == 2


def test_a_numba_kernel_is_named_the_same_whether_numba_cuda_adds_its_namespace() -> None:
    report = parse(_report("numba-cudapy-memcheck-oob"))  # the H200's numba-cuda: cudapy::...
    first = report.findings[0]
    assert first.kernel is not None and first.kernel.startswith(
        "cudapy::planted_kernels::oob_write[abi:v1,"
    )
    assert first.kernel_name == "planted_kernels::oob_write"
    assert report.kernels() == ("planted_kernels::oob_write",) and report.errors == 2


def test_numba_race_and_uninitialised_read_are_read_like_nvcc_ones() -> None:
    race = parse(_report("numba-racecheck-race"))
    (found,) = race.findings
    assert found.kernel_name == "planted_kernels::shared_race" and found.hazards == 4000
    uninit = parse(_report("numba-initcheck-uninit"))
    assert (uninit.errors, uninit.not_printed, len(uninit.findings)) == (1000, 980, 20)
    assert uninit.kernels() == ("planted_kernels::uninit_read",)
    assert parse(_report("numba-memcheck-clean")).clean


_PROBE_RECORD = "".join(
    f"========={line}\n"
    for line in (
        ' Program hit CUDA_ERROR_INVALID_VALUE (error 1) due to "invalid argument" on CUDA API call'
        " to cuGetProcAddress_v2.",
        "     Saved host backtrace up to driver entry point at error",
        "         Host Frame: ensure_initialized in driver.py:290",
        " ",  # the tool ends each record with its prefix and a space
    )
)


def test_failed_entry_point_lookups_are_counted_not_found() -> None:
    """numba-cuda's bindings asked for 34 entry points the H100's driver lacks (each reported by
    memcheck); a library probing is not an error of the code under test."""
    text = "========= COMPUTE-SANITIZER\n" + _PROBE_RECORD * 3
    report = parse(text + "========= ERROR SUMMARY: 3 errors\n")
    assert (report.findings, report.probes, report.errors) == ((), 3, 3) and report.clean
    oob = _report("numba-memcheck-oob").replace("========= COMPUTE-SANITIZER\n", text)
    mixed = parse(oob.replace("ERROR SUMMARY: 2 errors", "ERROR SUMMARY: 5 errors"))
    assert mixed.probes == 3 and len(mixed.findings) == 2 and not mixed.clean
    other = _PROBE_RECORD.replace("cuGetProcAddress_v2", "cuMemcpyDtoH_v2")
    assert len(parse(other).findings) == 1  # any other failed call is a finding
