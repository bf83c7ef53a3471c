"""How the test run picks GPU or interpreters, the report header, and which warnings may pass."""

from __future__ import annotations

import ctypes
import os
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from gpu_mode import GpuProbe, Mode, decide, probe_driver
from optional import first_kernel_or_skip, import_or_skip


def probing(devices: int, detail: str) -> Any:
    return lambda: GpuProbe(devices=devices, detail=detail)


def must_not_probe() -> GpuProbe:
    raise AssertionError("the driver was probed although the caller chose")


def test_no_gpu_turns_both_interpreters_on() -> None:
    mode = decide({}, probing(0, "no /dev/nvidiactl (no NVIDIA driver)"))
    assert not mode.gpu and mode.torch_device == "cpu"
    assert mode.flags == {"TRITON_INTERPRET": "1", "NUMBA_ENABLE_CUDASIM": "1"}
    assert mode.header() == (
        "cuvecops kernels: no usable GPU: no /dev/nvidiactl (no NVIDIA driver); "
        "Triton in the interpreter (TRITON_INTERPRET=1), "
        "Numba in the CUDA simulator (NUMBA_ENABLE_CUDASIM=1)"
    )


def test_a_usable_gpu_runs_the_kernels_on_it() -> None:
    mode = decide({}, probing(1, "1 CUDA device(s) via libcuda.so.1"))
    assert mode.gpu and mode.torch_device == "cuda"
    assert mode.flags == {"TRITON_INTERPRET": "0", "NUMBA_ENABLE_CUDASIM": "0"}
    assert "Triton on the GPU (TRITON_INTERPRET=0)" in mode.header()


def test_the_callers_flags_win_without_probing() -> None:
    mode = decide({"TRITON_INTERPRET": "1", "NUMBA_ENABLE_CUDASIM": "1"}, must_not_probe)
    assert not mode.gpu and mode.reason == "chosen by the caller"
    assert mode.from_caller == ("TRITON_INTERPRET", "NUMBA_ENABLE_CUDASIM")


def test_one_flag_from_the_caller_the_other_from_the_machine() -> None:
    mode = decide({"NUMBA_ENABLE_CUDASIM": "1"}, probing(2, "2 CUDA device(s)"))
    assert mode.flags == {"TRITON_INTERPRET": "0", "NUMBA_ENABLE_CUDASIM": "1"}
    assert "Numba in the CUDA simulator (NUMBA_ENABLE_CUDASIM=1, set by the caller)" in (
        mode.header()
    )


class FakeDriver:
    """libcuda's two entry points the probe calls."""

    def __init__(self, init: int, count: int) -> None:
        self.init, self.count = init, count

    def cuInit(self, flags: int) -> int:
        return self.init

    def cuDeviceGetCount(self, ref: Any) -> int:
        ref._obj.value = self.count  # ctypes.byref keeps the c_int in _obj
        return 0


def test_probe_without_the_control_device(tmp_path: Path) -> None:
    found = probe_driver(tmp_path / "nvidiactl")
    assert found == GpuProbe(devices=0, detail=f"no {tmp_path / 'nvidiactl'} (no NVIDIA driver)")


@pytest.mark.parametrize(
    ("driver", "expected"),
    [
        (FakeDriver(100, 0), GpuProbe(devices=0, detail="cuInit returned 100")),
        (FakeDriver(0, 2), GpuProbe(devices=2, detail="2 CUDA device(s) via libcuda.so.1")),
    ],
)
def test_probe_asks_the_driver(tmp_path: Path, driver: FakeDriver, expected: GpuProbe) -> None:
    control = tmp_path / "nvidiactl"
    control.touch()
    assert probe_driver(control, lambda name: driver) == expected  # type: ignore[arg-type,return-value]


def test_probe_without_libcuda(tmp_path: Path) -> None:
    control = tmp_path / "nvidiactl"
    control.touch()

    def missing(name: str) -> ctypes.CDLL:
        raise OSError(f"{name}: cannot open shared object file")

    found = probe_driver(control, missing)
    assert found.devices == 0 and "libcuda.so.1 not loadable" in found.detail


def test_this_run_exported_its_flags(run_mode: Mode) -> None:
    """triton and numba, imported after the conftest decided, see the decision."""
    assert {name: os.environ[name] for name in run_mode.flags} == dict(run_mode.flags)


# --- warnings ------------------------------------------------------------------------------------


def test_simulator_deprecations_are_ignored() -> None:
    warnings.warn_explicit(
        "an old NumPy API",
        DeprecationWarning,
        "kernelapi.py",
        1,
        module="numba.cuda.simulator.kernelapi",
    )


def test_other_deprecations_still_fail() -> None:
    with pytest.raises(DeprecationWarning, match="an old API"):
        warnings.warn_explicit("an old API", DeprecationWarning, "cpu.py", 1, module="cuvecops.cpu")


# --- optional kernel modules ---------------------------------------------------------------------


def test_a_module_that_fails_to_import_is_skipped_with_its_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "needs_row_stack.py").write_text(
        "raise AttributeError(\"module 'numpy' has no attribute 'row_stack'\")\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(pytest.skip.Exception, match="AttributeError: module 'numpy' has no"):
        import_or_skip("needs_row_stack")
    sys.modules.pop("needs_row_stack", None)


def test_an_importable_module_is_returned() -> None:
    assert import_or_skip("json").__name__ == "json"


def test_a_kernel_that_fails_at_its_first_compile_skips_the_module_with_its_error() -> None:
    def compile_fails() -> None:
        raise AttributeError("module 'numpy' has no attribute 'row_stack'")

    with pytest.raises(pytest.skip.Exception, match="numba cannot compile a kernel here: Attr"):
        first_kernel_or_skip("numba", compile_fails)
    first_kernel_or_skip("numba", lambda: None)  # a kernel that runs: nothing happens
