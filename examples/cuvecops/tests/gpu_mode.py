"""Whether this test run has a usable GPU, decided before triton or numba is imported.

Triton and Numba read ``TRITON_INTERPRET`` and ``NUMBA_ENABLE_CUDASIM`` when first imported, so
the choice is made from what the machine offers, without torch, triton or numba: the NVIDIA
control device must exist and the driver (libcuda, through ctypes) must initialise and count at
least one device. The interpreters are switched on only where that fails. A flag the caller
already set is never overridden.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

INTERPRETER_FLAGS = ("TRITON_INTERPRET", "NUMBA_ENABLE_CUDASIM")
CONTROL_DEVICE = Path("/dev/nvidiactl")
DRIVER_LIBRARY = "libcuda.so.1"
_ENGINES = {
    "TRITON_INTERPRET": ("Triton", "in the interpreter"),
    "NUMBA_ENABLE_CUDASIM": ("Numba", "in the CUDA simulator"),
}

Probe = Callable[[], "GpuProbe"]


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuProbe:
    """What the driver said: the device count and how it was found (or why none was)."""

    devices: int
    detail: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Mode:
    """The decision: GPU or interpreters, why, and the flag values (with who set them)."""

    gpu: bool
    reason: str
    flags: Mapping[str, str]
    from_caller: tuple[str, ...]

    @property
    def torch_device(self) -> str:
        """Where the Triton tests put their tensors: the CPU under the interpreter."""
        return "cpu" if is_set(self.flags["TRITON_INTERPRET"]) else "cuda"

    def header(self) -> str:
        """One line for pytest's report header: the reason, then where each engine runs."""
        parts = []
        for name, value in self.flags.items():
            engine, emulated = _ENGINES[name]
            where = emulated if is_set(value) else "on the GPU"
            by = ", set by the caller" if name in self.from_caller else ""
            parts.append(f"{engine} {where} ({name}={value}{by})")
        return f"cuvecops kernels: {self.reason}; {', '.join(parts)}"


def is_set(value: str) -> bool:
    """How triton and numba read a boolean flag."""
    return value.strip().lower() in ("1", "true", "yes", "on")


def probe_driver(
    control: Path = CONTROL_DEVICE, load: Callable[[str], ctypes.CDLL] = ctypes.CDLL
) -> GpuProbe:
    """Count CUDA devices through the driver API (``cuInit``, ``cuDeviceGetCount``)."""
    if not control.exists():
        return GpuProbe(devices=0, detail=f"no {control} (no NVIDIA driver)")
    try:
        driver = load(DRIVER_LIBRARY)
    except OSError as err:
        return GpuProbe(devices=0, detail=f"{DRIVER_LIBRARY} not loadable ({err})")
    status = int(driver.cuInit(0))
    if status != 0:
        return GpuProbe(devices=0, detail=f"cuInit returned {status}")
    count = ctypes.c_int(0)
    status = int(driver.cuDeviceGetCount(ctypes.byref(count)))
    if status != 0:
        return GpuProbe(devices=0, detail=f"cuDeviceGetCount returned {status}")
    return GpuProbe(
        devices=count.value, detail=f"{count.value} CUDA device(s) via {DRIVER_LIBRARY}"
    )


def decide(environ: Mapping[str, str], probe: Probe = probe_driver) -> Mode:
    """The mode for a run with ``environ``; the driver is not probed when the caller set both
    flags (then they alone decide)."""
    given = tuple(name for name in INTERPRETER_FLAGS if environ.get(name, "") != "")
    if len(given) == len(INTERPRETER_FLAGS):
        return Mode(
            gpu=not is_set(environ["TRITON_INTERPRET"]),
            reason="chosen by the caller",
            flags={name: environ[name] for name in INTERPRETER_FLAGS},
            from_caller=given,
        )
    found = probe()
    gpu = found.devices > 0
    default = "0" if gpu else "1"
    flags = {name: environ.get(name) or default for name in INTERPRETER_FLAGS}
    reason = found.detail if gpu else f"no usable GPU: {found.detail}"
    return Mode(gpu=gpu, reason=reason, flags=flags, from_caller=given)
