"""Benchmarks done properly for Python, Triton and CUDA extensions: declare cases, time them
(CUDA events with L2 flush, wall clock, or callgrind instruction counts), keep every sample in
the results store, decide regressions with a bootstrap CI and an effect-size threshold.

Benchmark modules import their declarations from here::

    from cuship.bench import case
"""

from __future__ import annotations

from cuship.bench.registry import Case, case, case_key

__all__ = ["Case", "case", "case_key"]
