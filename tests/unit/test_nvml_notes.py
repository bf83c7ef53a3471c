"""An NVML that is installed but fails is said in the fingerprint; an absent one is silent."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

import cuship.machine
from cuship.bench import env
from cuship.bench.timers import cuda as cuda_timer
from cuship.machine import Fingerprint, Gpu
from cuship.machine import probe as _probe
from cuship.machine.probe import NvmlAnswer, NvmlFailure, SystemProbe


class NVMLError_DriverNotLoaded(Exception):  # pynvml's own spelling
    def __str__(self) -> str:
        return "Driver Not Loaded"


class FakeNvml(types.ModuleType):
    """A stand-in for pynvml: one H100, or failing at ``fail_at`` (a function name)."""

    NVML_CLOCK_SM = 1

    def __init__(self, fail_at: str | None = None) -> None:
        super().__init__("pynvml")
        self.fail_at = fail_at
        self.shutdowns = 0

    def _answer(self, name: str, value: Any) -> Any:
        if name == self.fail_at:
            raise NVMLError_DriverNotLoaded()
        return value

    def nvmlInit(self) -> None:
        self._answer("nvmlInit", None)

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return int(self._answer("nvmlSystemGetCudaDriverVersion", 13000))

    def nvmlSystemGetDriverVersion(self) -> str:
        return str(self._answer("nvmlSystemGetDriverVersion", "580.65.06"))

    def nvmlDeviceGetCount(self) -> int:
        return int(self._answer("nvmlDeviceGetCount", 1))

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        return str(self._answer("nvmlDeviceGetHandleByIndex", f"gpu{index}"))

    def nvmlDeviceGetCudaComputeCapability(self, handle: str) -> tuple[int, int]:
        return (9, 0)

    def nvmlDeviceGetName(self, handle: str) -> bytes:
        return b"NVIDIA H100 80GB HBM3"

    def nvmlDeviceGetMemoryInfo(self, handle: str) -> Any:
        return types.SimpleNamespace(total=80 * 1024**3)

    def nvmlDeviceGetUUID(self, handle: str) -> str:
        return "GPU-1"

    def nvmlDeviceGetClockInfo(self, handle: str, kind: int) -> int:
        return int(self._answer("nvmlDeviceGetClockInfo", 1755))

    def nvmlDeviceGetMaxClockInfo(self, handle: str, kind: int) -> int:
        return 1980

    def nvmlDeviceGetPowerManagementLimit(self, handle: str) -> int:
        return 700_000


def _install(monkeypatch: pytest.MonkeyPatch, nvml: types.ModuleType | None) -> None:
    """``nvml`` as ``import pynvml`` (None: not installed)."""
    monkeypatch.setitem(sys.modules, "pynvml", nvml)


@pytest.fixture
def driver_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A driver node exists, so the probe asks NVML."""
    monkeypatch.setattr(_probe, "_DRIVER_NODES", (str(tmp_path),))


DRIVER_NOT_LOADED = "NVMLError_DriverNotLoaded: Driver Not Loaded"


@pytest.mark.usefixtures("driver_node")
def test_probe_reads_a_working_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = FakeNvml()
    _install(monkeypatch, nvml)
    answer = SystemProbe().nvml()
    assert isinstance(answer, NvmlAnswer)
    assert (answer.cuda_driver, answer.gpus[0].name, answer.gpus[0].cc) == (
        "13.0",
        "NVIDIA H100 80GB HBM3",
        "9.0",
    )
    assert nvml.shutdowns == 1


@pytest.mark.usefixtures("driver_node")
def test_probe_says_how_nvml_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    _install(monkeypatch, FakeNvml(fail_at="nvmlInit"))
    assert SystemProbe().nvml() == NvmlFailure(f"nvmlInit failed: {DRIVER_NOT_LOADED}")
    nvml = FakeNvml(fail_at="nvmlDeviceGetCount")
    _install(monkeypatch, nvml)
    assert SystemProbe().nvml() == NvmlFailure(f"asking for the GPUs failed: {DRIVER_NOT_LOADED}")
    assert nvml.shutdowns == 1


@pytest.mark.usefixtures("driver_node")
def test_probe_is_silent_without_nvidia_ml_py(monkeypatch: pytest.MonkeyPatch) -> None:
    _install(monkeypatch, None)
    assert SystemProbe().nvml() is None


def _machine_with_a_gpu(environ: object = None) -> Fingerprint:
    return Fingerprint(
        gpus=(Gpu(index=0, name="NVIDIA H100 80GB HBM3", cc="9.0"),),
        gpu_source="procfs",
        driver_version="580.65.06",
        driver_cuda="13.0",
        toolkit=None,
        torch=None,
        python="3.11.9",
        python_tag="cp311",
        platform_tags=("linux_x86_64",),
        tags=("cp311-cp311-linux_x86_64",),
        glibc="2.36",
        machine="x86_64",
        cpus=2,
        memory_total_gib=None,
        memory_available_gib=None,
        notes=("nvml: nvmlInit failed: the probe's note",),
    )


@pytest.mark.parametrize(
    ("fail_at", "said"),
    [
        ("nvmlInit", f"nvml: nvmlInit failed: {DRIVER_NOT_LOADED}; no clocks recorded"),
        ("nvmlDeviceGetClockInfo", f"nvml: reading GPU 0's clocks failed: {DRIVER_NOT_LOADED}"),
    ],
)
def test_bench_fingerprint_notes_a_failing_nvml(
    monkeypatch: pytest.MonkeyPatch, fail_at: str, said: str
) -> None:
    monkeypatch.setattr(cuship.machine, "fingerprint", _machine_with_a_gpu)
    _install(monkeypatch, FakeNvml(fail_at=fail_at))
    fp = env.bench_fingerprint({}, timer="cuda")
    assert fp["notes"] == ["nvml: nvmlInit failed: the probe's note", said]
    assert fp["sm_clock_mhz"] is None


def test_bench_fingerprint_with_a_working_nvml_has_clocks_and_no_nvml_note(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cuship.machine, "fingerprint", _machine_with_a_gpu)
    _install(monkeypatch, FakeNvml())
    fp = env.bench_fingerprint({}, timer="cuda")
    assert (fp["sm_clock_mhz"], fp["max_sm_clock_mhz"], fp["power_limit_w"]) == (1755, 1980, 700.0)
    assert fp["notes"] == ["nvml: nvmlInit failed: the probe's note"]  # the machine's, kept


def test_bench_fingerprint_without_nvidia_ml_py_is_silent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cuship.machine, "fingerprint", _machine_with_a_gpu)
    _install(monkeypatch, None)
    fp = env.bench_fingerprint({}, timer="cuda")
    assert fp["notes"] == ["nvml: nvmlInit failed: the probe's note"]
    assert fp["sm_clock_mhz"] is None


def test_cuda_timer_notes_a_failing_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    _install(monkeypatch, FakeNvml(fail_at="nvmlInit"))
    handle, notes = cuda_timer._nvml_handle(0)
    assert handle is None
    assert notes == (f"nvml: {DRIVER_NOT_LOADED}; no SM clocks, so throttling went unseen",)
    _install(monkeypatch, FakeNvml())
    assert cuda_timer._nvml_handle(0) == ("gpu0", ())
    _install(monkeypatch, None)
    assert cuda_timer._nvml_handle(0) == (None, ())
