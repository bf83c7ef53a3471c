"""Refusing to time host code with CUDA events.

A case timed with the CUDA timer that launches no GPU work (a NumPy fallback, inputs left on the
host by a CPU build) would be reported as a CUDA-event measurement of host code. Once per point,
after every point of the run was timed (the profiler slows every later launch of the process),
the runner runs the call once more under a :class:`KernelProbe`, which counts the device
activities (kernels, copies, sets) the call caused. None makes the point an error, its samples
discarded; a probe that cannot see device activity at all is a note, never a refusal.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, MutableMapping
from typing import Any, Protocol

__all__ = [
    "HOST_CODE_FIX",
    "HostCodeTimed",
    "KernelProbe",
    "ProfilerUnavailable",
    "TorchProfilerProbe",
    "check_launches",
]

Call = Callable[[], object]

HOST_CODE_FIX = (
    "a CPU fallback, or inputs on the host? install the package's CUDA build, build the inputs "
    "on the GPU in the case's setup, or time it with --timer wall"
)


class ProfilerUnavailable(Exception):
    """The probe cannot tell whether a call launched device work."""


class HostCodeTimed(Exception):
    """The call launched no CUDA kernel, copy or set: CUDA events would time the host."""

    def __init__(self, which: str = "") -> None:
        self.which = which
        super().__init__(self.describe("the case"))

    def describe(self, key: str) -> str:
        """The error text for the case (or point) named ``key``."""
        name = f"{key} ({self.which})" if self.which else key
        return (
            f"timed host code: {name} launched no CUDA kernel when checked; "
            f"it runs on the CPU ({HOST_CODE_FIX})"
        )


class KernelProbe(Protocol):
    """Counts the device activities (kernels, memcpy, memset) one run of ``call`` caused."""

    def device_events(self, call: Call) -> int: ...


def check_launches(probe: KernelProbe, call: Call, which: str = "") -> tuple[str, ...]:
    """Raise :class:`HostCodeTimed` when ``call`` launches nothing on the device; return a note
    (and refuse nothing) when the probe cannot tell."""
    try:
        count = probe.device_events(call)
    except ProfilerUnavailable as err:
        return (
            f"not checked for CUDA kernels: {err}; a case that runs on the CPU would not be caught",
        )
    if count == 0:
        raise HostCodeTimed(which)
    return ()


class TorchProfilerProbe:
    """:mod:`torch.profiler` with CPU and CUDA activities; counts events whose device type is
    CUDA. The first use profiles a known kernel: if the profiler sees no device activity for it
    (no CUPTI, a profiler already running), the probe is unavailable rather than wrong.
    ``environ`` (default ``os.environ``) receives torch's CUPTI workaround before CUDA 12.6."""

    def __init__(
        self, torch: Any, device: int = 0, environ: MutableMapping[str, str] | None = None
    ) -> None:
        self.torch = torch
        self.device = device
        self.environ = os.environ if environ is None else environ
        self._why: str | None = None
        self._calibrated = False

    def device_events(self, call: Call) -> int:
        if not self._calibrated:
            self._why = self._calibrate()
            self._calibrated = True
        if self._why is not None:
            raise ProfilerUnavailable(self._why)
        try:
            return self._count(call)
        except Exception as err:  # the profiler failing is no verdict on the case
            raise ProfilerUnavailable(
                f"torch.profiler failed ({type(err).__name__}: {err})"
            ) from err

    def _calibrate(self) -> str | None:
        try:
            canary = self.torch.ones(1, device=f"cuda:{self.device}")
            seen = self._count(lambda: canary.add_(1))
        except Exception as err:  # no profiler here: say so, refuse nothing
            return f"torch.profiler is unavailable ({type(err).__name__}: {err})"
        if seen == 0:
            return "torch.profiler saw no CUDA activity for a known kernel (is CUPTI available?)"
        return None

    def _count(self, call: Call) -> int:
        torch = self.torch
        profiler = torch.profiler
        activities = [profiler.ProfilerActivity.CPU, profiler.ProfilerActivity.CUDA]
        _keep_cupti_with_graphs(torch, self.environ)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the calibration decides whether it works
            with profiler.profile(activities=activities) as prof:
                call()
                torch.cuda.synchronize(self.device)
        cuda = torch.autograd.DeviceType.CUDA
        return sum(1 for event in prof.events() if getattr(event, "device_type", None) == cuda)


def _keep_cupti_with_graphs(torch: Any, environ: MutableMapping[str, str]) -> None:
    """The hot measurement captures CUDA graphs in this process, and the next point profiles
    again. Before CUDA 12.6, re-initialising CUPTI after its teardown crashes in a process that
    used CUDA graphs; torch.profiler's own workaround (for inductor's graphs) keeps CUPTI up.
    Do the same, unless the user chose otherwise."""
    version = str(getattr(getattr(torch, "version", None), "cuda", None) or "")
    parts = version.split(".")
    known = len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit()
    if known and (int(parts[0]), int(parts[1])) < (12, 6):
        environ.setdefault("DISABLE_CUPTI_LAZY_REINIT", "1")
        environ.setdefault("TEARDOWN_CUPTI", "0")
