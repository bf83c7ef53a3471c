"""The only place machine.py touches the outside world: run a command, read a file, find a tool.

Tests replace a :class:`Probe` with canned answers; the real one never raises for a missing tool
or file, it answers ``None``; an NVML that is installed but fails answers :class:`NvmlFailure`.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import field
from pathlib import Path
from typing import Any, Protocol

from cuship import _read, process
from cuship._record import frozen
from cuship.errors import TimedOut, ToolMissing

__all__ = ["NvmlAnswer", "NvmlFailure", "NvmlGpu", "Probe", "SystemProbe"]

_DRIVER_NODES = ("/dev/nvidiactl", "/dev/dxg", "/proc/driver/nvidia")


@frozen
class NvmlGpu:
    index: int
    name: str
    cc: str
    memory_mib: int
    uuid: str


@frozen
class NvmlAnswer:
    driver_version: str
    cuda_driver: str  # "12.8"
    gpus: tuple[NvmlGpu, ...]


@frozen(kw_only=False)
class NvmlFailure:
    """NVML is installed and a driver node exists, but NVML failed: ``message`` says how."""

    message: str


class Probe(Protocol):
    def run(self, argv: Sequence[str], timeout: float = 10.0) -> str | None: ...
    def read(self, path: str) -> str | None: ...
    def read_bytes(self, path: str) -> bytes | None: ...
    def which(self, name: str, path: str | None = None) -> str | None: ...
    def listdir(self, path: str) -> tuple[str, ...]: ...
    def nvml(self) -> NvmlAnswer | NvmlFailure | None: ...


@frozen(kw_only=False)
class SystemProbe:
    """Answers from this machine. A file it will not read (a FIFO, a device, past its cap, not
    UTF-8: :mod:`cuship._read`) answers None like a missing one, and why is kept in
    ``refused`` for the fingerprint's notes."""

    refused: list[str] = field(default_factory=list)

    def run(self, argv: Sequence[str], timeout: float = 10.0) -> str | None:
        try:
            done = process.run(argv, timeout=timeout)
        except (ToolMissing, TimedOut):
            return None
        return done.stdout if done.returncode == 0 else None

    def read(self, path: str) -> str | None:
        kind = _read.TORCH_VERSION if path.endswith("/torch/version.py") else _read.SYSTEM_FILE
        data = self._read(path, kind)
        return None if data is None else data.decode("utf-8", errors="replace")

    def read_bytes(self, path: str) -> bytes | None:
        return self._read(path, _read.TORCH_LIBRARY)

    def _read(self, path: str, kind: _read.Kind) -> bytes | None:
        try:
            return _read.read_bytes(path, kind)
        except OSError:
            return None
        except _read.Refused as err:
            self.refused.append(f"not read: {err.message}")
            return None

    def which(self, name: str, path: str | None = None) -> str | None:
        return shutil.which(name, path=path)

    def listdir(self, path: str) -> tuple[str, ...]:
        try:
            return tuple(sorted(p.name for p in Path(path).iterdir()))
        except OSError:
            return ()

    def nvml(self) -> NvmlAnswer | NvmlFailure | None:
        """Ask NVML (nvidia-ml-py) when it is installed and a driver node exists; else None.
        An NVML that is there but fails (init or a query) is an :class:`NvmlFailure`, not None:
        a broken NVML must not read as "no GPU".

        Without an NVIDIA driver node NVML could only fail, and importing pynvml just to fail
        slows every later garbage collection of a big process (a pytest session: 2-4x), so it
        is not tried.
        """
        if not any(Path(node).exists() for node in _DRIVER_NODES):
            return None
        try:
            import pynvml
        except ImportError:
            return None
        try:
            pynvml.nvmlInit()
        except Exception as err:
            return NvmlFailure(f"nvmlInit failed: {_error(err)}")
        try:
            return _nvml_answer(pynvml)
        except Exception as err:
            return NvmlFailure(f"asking for the GPUs failed: {_error(err)}")
        finally:
            with suppress(Exception):
                pynvml.nvmlShutdown()


def _error(err: Exception) -> str:
    return f"{type(err).__name__}: {err}"


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _nvml_answer(nvml: Any) -> NvmlAnswer:
    cuda = int(nvml.nvmlSystemGetCudaDriverVersion())
    gpus = []
    for index in range(int(nvml.nvmlDeviceGetCount())):
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
        gpus.append(
            NvmlGpu(
                index=index,
                name=_text(nvml.nvmlDeviceGetName(handle)),
                cc=f"{major}.{minor}",
                memory_mib=int(nvml.nvmlDeviceGetMemoryInfo(handle).total) // (1024 * 1024),
                uuid=_text(nvml.nvmlDeviceGetUUID(handle)),
            )
        )
    return NvmlAnswer(
        driver_version=_text(nvml.nvmlSystemGetDriverVersion()),
        cuda_driver=f"{cuda // 1000}.{(cuda % 1000) // 10}",
        gpus=tuple(gpus),
    )
