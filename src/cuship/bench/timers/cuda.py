"""The CUDA timer: cold samples with CUDA events, a host-code check, and a hot measurement.

* cold sample: the L2 flushed by writing a buffer twice its size, then one launch between two
  CUDA events; the SM clock is read from NVML after it (the maximum once, at start).
* check (once per point, after every point was timed; see :class:`cuship.bench.timers.measure.Timer`):
  the call must launch device work (:mod:`cuship.bench.timers.launches`), else the point is refused
  as "timed host code".
* hot (once per point, after the samples): N back-to-back calls (:mod:`cuship.bench.timers.hot`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from cuship.bench.timers.hot import Hot, measure_hot
from cuship.bench.timers.launches import KernelProbe, TorchProfilerProbe, check_launches
from cuship.bench.timers.measure import Call, l2_flush_bytes

__all__ = ["CudaTimer"]


class CudaTimer:
    """CUDA events around each call, L2 flushed before it, SM clock from NVML after it.

    ``probe`` counts the device work of a call (default: :mod:`torch.profiler`); ``hot``
    turns the hot measurement on (default) or off.
    """

    def __init__(
        self,
        torch: Any,
        device: int = 0,
        warmup_s: float = 0.05,
        *,
        probe: KernelProbe | None = None,
        hot: bool = True,
    ) -> None:
        self.torch = torch
        self.device = device
        self.warmup_s = warmup_s
        self.calls_per_sample = 1
        self.probe: KernelProbe = probe if probe is not None else TorchProfilerProbe(torch, device)
        self.measure_hot = hot
        props = torch.cuda.get_device_properties(device)
        size = l2_flush_bytes(int(props.L2_cache_size))
        self.flush = torch.empty(size // 4, dtype=torch.int32, device=f"cuda:{device}")
        self._nvml, self._nvml_notes = _nvml_handle(device)
        self._max_clock = self._read_max_clock()  # a constant: asked once, not per sample

    def prepare(self, call: Call) -> None:
        sync = self.torch.cuda.synchronize
        start = time.perf_counter()
        call()
        sync()
        while time.perf_counter() - start < self.warmup_s:
            call()
            sync()

    def check(self, make_call: Callable[[], Call]) -> tuple[str, ...]:
        """Refuse a call that launches no device work (HostCodeTimed); notes if unchecked
        (a failing NVML among them: no SM clocks, so throttling went unseen)."""
        return check_launches(self.probe, make_call()) + self._nvml_notes

    def sample(self, call: Call) -> tuple[float, int | None]:
        cuda = self.torch.cuda
        begin, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
        self.flush.zero_()
        begin.record()
        call()
        end.record()
        end.synchronize()
        return float(begin.elapsed_time(end)) / 1e3, self._clock()

    def hot(self, call: Call, per_call: float) -> Hot | None:
        """Per-call time of back-to-back calls (graph replays, else a batch of launches)."""
        if not self.measure_hot:
            return None
        return measure_hot(self.torch, call, per_call)

    def _clock(self) -> int | None:
        if self._nvml is None:
            return None
        import pynvml

        return int(pynvml.nvmlDeviceGetClockInfo(self._nvml, pynvml.NVML_CLOCK_SM))

    def max_clock(self) -> int | None:
        return self._max_clock

    def _read_max_clock(self) -> int | None:
        if self._nvml is None:
            return None
        import pynvml

        return int(pynvml.nvmlDeviceGetMaxClockInfo(self._nvml, pynvml.NVML_CLOCK_SM))


def _nvml_handle(device: int) -> tuple[Any, tuple[str, ...]]:
    """NVML's handle of ``device`` (None without nvidia-ml-py) and a note when NVML fails."""
    try:
        import pynvml
    except ImportError:
        return None, ()
    try:
        pynvml.nvmlInit()
        return pynvml.nvmlDeviceGetHandleByIndex(device), ()
    except Exception as err:
        note = f"nvml: {type(err).__name__}: {err}; no SM clocks, so throttling went unseen"
        return None, (note,)
