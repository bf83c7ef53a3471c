"""The environment a bench run is keyed by: GPU SKU, driver, CUDA, clocks, CPU, packages, timer.

``machine_id`` condenses the parts that make two runs comparable; gates refuse to compare runs
whose ids differ, and the dashboard groups history by it.
"""

from __future__ import annotations

import hashlib
import json
import platform
from collections.abc import Mapping, Sequence
from contextlib import suppress
from typing import Any

from cuship import _read, settings

__all__ = ["PACKAGES", "TIMER_NAMES", "bench_fingerprint", "cpu_model", "machine_id"]

# Versions recorded with every run (besides the project's own distribution).
PACKAGES = ("numpy", "scipy", "torch", "triton", "numba", "numba-cuda", "cupy", "nvidia-ml-py")
TIMER_NAMES = {"cuda": "cuda-events", "wall": "wall", "instructions": "instructions"}
_ID_FIELDS = ("gpu", "gpu_count", "driver", "cuda", "cpu_model", "cpu_count", "timer")


def machine_id(fp: Mapping[str, object]) -> str:
    """First 12 hex of sha256 over the JSON of (gpu, gpu_count, driver, cuda, cpu_model,
    cpu_count, timer): runs with the same id may be compared."""
    body = json.dumps([fp.get(name) for name in _ID_FIELDS])
    return hashlib.sha256(body.encode()).hexdigest()[:12]


def cpu_model(cpuinfo: str) -> str:
    """The ``model name`` line of /proc/cpuinfo, else the platform's processor string."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "cpu model") and value.strip():
            return value.strip()
    return platform.processor() or platform.machine()


def _system_text(path: str) -> str:
    try:
        return _read.read_bytes(path, _read.SYSTEM_FILE).decode("utf-8", errors="replace")
    except (OSError, _read.Refused):
        return ""


def _versions(names: Sequence[str]) -> dict[str, str]:
    found = {}
    for name in names:
        try:
            version = _read.installed_version(name)
        except _read.Refused:
            continue
        if version is not None:
            found[name] = version
    return found


def _nvml_clocks(notes: list[str]) -> dict[str, Any]:
    """SM clock now and at most, and the power limit, of GPU 0 (None each when NVML is absent;
    an NVML that is installed but fails also adds a note to ``notes``)."""
    out: dict[str, Any] = {"sm_clock_mhz": None, "max_sm_clock_mhz": None, "power_limit_w": None}
    try:
        import pynvml
    except ImportError:
        return out
    try:
        pynvml.nvmlInit()
    except Exception as err:
        notes.append(f"nvml: nvmlInit failed: {type(err).__name__}: {err}; no clocks recorded")
        return out
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        out["sm_clock_mhz"] = int(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM))
        out["max_sm_clock_mhz"] = int(
            pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM)
        )
        out["power_limit_w"] = pynvml.nvmlDeviceGetPowerManagementLimit(handle) / 1000.0
    except Exception as err:
        notes.append(f"nvml: reading GPU 0's clocks failed: {type(err).__name__}: {err}")
    finally:
        with suppress(Exception):
            pynvml.nvmlShutdown()
    return out


def bench_fingerprint(
    environ: Mapping[str, str], *, timer: str, project_package: str | None = None
) -> dict[str, Any]:
    """The contract's fingerprint dict for this machine and ``timer`` (cuda, wall, instructions);
    ``notes`` holds the machine's notes (an NVML that fails among them)."""
    from cuship.machine import fingerprint

    fp = fingerprint(environ)
    gpu = fp.gpus[0].name if fp.gpus else None
    cuda = fp.toolkit.version if fp.toolkit and fp.toolkit.version else fp.driver_cuda
    notes = list(fp.notes)
    clocks = (
        _nvml_clocks(notes)
        if gpu and settings.GPUS not in environ
        else {"sm_clock_mhz": None, "max_sm_clock_mhz": None, "power_limit_w": None}
    )
    doc: dict[str, Any] = {
        "gpu": gpu,
        "gpu_count": len(fp.gpus),
        "driver": fp.driver_version,
        "cuda": cuda,
        **clocks,
        "cpu_model": cpu_model(_system_text("/proc/cpuinfo")),
        "cpu_count": fp.cpus,
        "python": platform.python_version(),
        "packages": _versions((*PACKAGES, *([project_package] if project_package else []))),
        "timer": TIMER_NAMES.get(timer, timer),
        "notes": notes,
    }
    doc["machine_id"] = machine_id(doc)
    return doc
