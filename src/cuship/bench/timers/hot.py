"""The hot per-call time: N back-to-back calls, timed as one, divided by N.

A cold sample (:class:`~cuship.bench.timers.cuda.CudaTimer`) is one launch between two CUDA
events after an L2 flush. For a kernel of a few microseconds that measures launch latency more
than the kernel. The hot measurement captures N calls in a CUDA graph (``torch.cuda.CUDAGraph``,
warmed up on a side stream first, as the torch documentation shows) and times replays with
events; when the call cannot be captured (it synchronises, allocates on the host, reads a
value back, ...) it times N plain launches between two events instead (nvbench's "batch"
measurement), and says so. N is chosen so one replay lasts about ``target`` seconds (0.2 ms),
at most ``cap`` (100) calls; up to 20 replays are timed and the median per call reported.

Why 100 at most: per-call time inside a graph depends on its length. On an H100 (driver 580,
torch 2.11), torch.add of 4,096 floats took 1.09, 1.06, 1.21, 1.20 and 1.20 µs per call in
graphs of 50, 100, 250, 500 and 1,000 calls (65,536 floats: 1.44, 1.40, 1.37, 1.36, 1.36):
long graphs add about 0.15 µs per node for tiny kernels and gain nothing for larger ones. A
0.2 ms replay is still 400 times the event timer's 0.5 µs resolution.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "LAUNCH_BOUND_RATIO",
    "LAUNCH_BOUND_TEXT",
    "Hot",
    "HotMethod",
    "calls_for",
    "launch_bound",
    "measure_hot",
    "replays_for",
]

HotMethod = Literal["cuda-graph", "batch"]
Call = Callable[[], object]
Run = Callable[[], object]

# A case is launch-bound when back-to-back calls take under half the cold time each.
LAUNCH_BOUND_RATIO = 0.5
LAUNCH_BOUND_TEXT = (
    "per-launch overhead dominates: cold timing measures launch latency, not the kernel"
)
_SIDE_STREAM_WARMUP = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class Hot:
    """Per-call seconds of back-to-back calls: the median over ``samples`` (one per replay)."""

    per_call: float
    samples: tuple[float, ...]
    calls: int
    method: HotMethod
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "per_call": self.per_call,
            "samples": list(self.samples),
            "calls": self.calls,
            "method": self.method,
            "note": self.note,
        }


def calls_for(per_call: float, target: float = 2e-4, cap: int = 100) -> int:
    """How many calls make one replay last ``target`` seconds: 1 to ``cap``."""
    if not per_call > 0 or not math.isfinite(per_call):
        return cap
    return max(1, min(cap, math.ceil(target / per_call * (1 - 1e-9))))  # 2e-4 / 4e-6 is 50


def replays_for(replay: float, budget: float = 0.05, low: int = 5, high: int = 20) -> int:
    """How many replays to time: as many as fit ``budget`` seconds, ``low`` to ``high``."""
    if not replay > 0:
        return high
    return max(low, min(high, int(budget / replay)))


def launch_bound(hot: float, cold: float, ratio: float = LAUNCH_BOUND_RATIO) -> bool:
    """True when the hot per-call time is under ``ratio`` × the cold one."""
    return cold > 0 and hot < ratio * cold


def _elapsed(torch: Any, run: Run) -> float:
    """Seconds between two CUDA events recorded around ``run`` on the current stream."""
    cuda = torch.cuda
    begin, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
    begin.record()
    run()
    end.record()
    end.synchronize()
    return float(begin.elapsed_time(end)) / 1e3


def _graph_run(torch: Any, call: Call, calls: int) -> Run:
    """Capture ``calls`` back-to-back calls in a CUDA graph; its ``replay`` runs them."""
    cuda = torch.cuda
    side = cuda.Stream()
    side.wait_stream(cuda.current_stream())
    with cuda.stream(side):  # warm-up on a side stream before capture, as torch documents
        for _ in range(_SIDE_STREAM_WARMUP):
            call()
    before = cuda.current_stream()
    before.wait_stream(side)
    graph = cuda.CUDAGraph()
    try:
        with cuda.graph(graph):
            for _ in range(calls):
                call()
    except BaseException:
        # torch.cuda.graph leaves its capture stream current when ending a failed capture
        # raises; the cold samples of the next point must not run there.
        cuda.set_stream(before)
        raise
    replay: Run = graph.replay
    return replay


def _batch_run(torch: Any, call: Call, calls: int) -> Run:
    """``calls`` plain launches in a row."""

    def run() -> None:
        for _ in range(calls):
            call()

    return run


Builder = Callable[[Any, Call, int], Run]


def _timed(
    torch: Any, call: Call, build: Builder, estimate: float, target: float, cap: int
) -> tuple[int, list[float]]:
    """Build a run of N calls (N from ``estimate``, sized again once on a measured replay if
    that fell short of ``target``) and time replays; returns N and the per-call seconds."""
    calls = calls_for(estimate, target, cap)
    run = build(torch, call, calls)
    run()  # the first replay uploads the graph; the first batch warms the caches
    torch.cuda.synchronize()
    first = _elapsed(torch, run)
    better = calls_for(first / calls, target, cap)
    if first < target and better > calls:
        calls, run = better, build(torch, call, better)
        run()
        torch.cuda.synchronize()
        first = _elapsed(torch, run)
    times = [first] + [_elapsed(torch, run) for _ in range(replays_for(first) - 1)]
    return calls, [t / calls for t in times]


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    line = text[0] if text else ""
    return f"{type(err).__name__}: {line[:200]}" if line else type(err).__name__


def _settle(torch: Any) -> None:
    """After a failed capture: wait for the device; an error here is the batch's to meet."""
    try:
        torch.cuda.synchronize()
    except Exception:  # the batch run below reports a device that is really broken
        return


def measure_hot(
    torch: Any, call: Call, estimate: float, *, target: float = 2e-4, cap: int = 100
) -> Hot:
    """Hot per-call seconds of ``call``: CUDA-graph replays, else a batch of launches.

    ``estimate`` is a per-call time to size N from (the cold median). Raises only when the
    batch fallback fails too.
    """
    try:
        calls, times = _timed(torch, call, _graph_run, estimate, target, cap)
        method: HotMethod = "cuda-graph"
        note = None
    except Exception as err:  # capture fails for many reasons; the batch method stands in
        _settle(torch)
        calls, times = _timed(torch, call, _batch_run, estimate, target, cap)
        method = "batch"
        note = (
            f"CUDA graph capture failed ({_first_line(err)}); timed {calls} launches "
            "between two events instead"
        )
    return Hot(
        per_call=statistics.median(times),
        samples=tuple(times),
        calls=calls,
        method=method,
        note=note,
    )
