"""cuship bench cases for cuvecops: each op on seeded random inputs, with its work model.

Where the CUDA backend and a CUDA build of torch are both usable, the setups put the inputs (and a
preallocated output, so allocation is not timed) on the GPU as torch tensors: the timed call is
the kernel on device-resident data, as a GPU program runs it. Elsewhere they are NumPy arrays
and the NumPy fallbacks are timed. The work models hold for both: saxpy reads x and y and writes
the result (12 bytes per element), whatever memory they are in.

``CUVECOPS_PLANT_SLOWDOWN=1`` plants a regression for the gate demo: saxpy then works on arrays
three times as long as its work model says, so it runs about three times slower per call. A
smaller plant is a coin toss on a loaded 2-core machine: an 18 % plant measured anywhere from
5 % to 15 % slower process to process (the NumPy fallback's temporaries are fresh pages each
call), and a 50 % plant once went unseen while a test suite ran beside it.
"""

from __future__ import annotations

import os
from functools import cache
from typing import Any

import cuvecops
import numpy as np

from cuship.bench import case

PLANT_ENV = "CUVECOPS_PLANT_SLOWDOWN"


@cache
def _cuda_torch() -> Any:
    """torch, when cuvecops runs on CUDA and torch sees the device; else None (NumPy inputs)."""
    if cuvecops.backend_info().name != "cuda":
        return None
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def _to_gpu(torch: Any, values: np.ndarray[Any, Any]) -> Any:
    """A CUDA tensor copy of ``values``, finished before timing starts."""
    tensor = torch.from_numpy(values).cuda()
    torch.cuda.synchronize()
    return tensor


def _saxpy_inputs(rng: np.random.Generator, n: int) -> dict[str, Any]:
    if os.environ.get(PLANT_ENV, "") not in ("", "0"):
        n *= 3
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    a = float(rng.uniform(0.5, 2.0))
    torch = _cuda_torch()
    if torch is None:
        return {"a": a, "x": x, "y": y}
    xd, yd = _to_gpu(torch, x), _to_gpu(torch, y)
    return {"a": a, "x": xd, "y": yd, "out": torch.empty_like(xd)}


@case(
    params={"n": [1 << 18, 1 << 24]},
    setup=_saxpy_inputs,
    bytes=lambda n: 3 * 4 * n,
    flops=lambda n: 2 * n,
    peak_dtype="fp32",
)
def saxpy(a: float, x: Any, y: Any, out: Any = None) -> Any:
    """a * x + y in float32: reads x and y, writes the result."""
    return cuvecops.saxpy(a, x, y, out=out)


def _softmax_inputs(rng: np.random.Generator, rows: int, cols: int) -> dict[str, Any]:
    x = rng.standard_normal((rows, cols), dtype=np.float32) * 4
    torch = _cuda_torch()
    if torch is None:
        return {"x": x}
    xd = _to_gpu(torch, x)
    return {"x": xd, "out": torch.empty_like(xd)}


@case(
    params={"rows": [128], "cols": [512]},
    setup=_softmax_inputs,
    bytes=lambda rows, cols: 2 * 4 * rows * cols,
    flops=lambda rows, cols: 5 * rows * cols,
    peak_dtype="fp32",
)
def softmax(x: Any, out: Any = None) -> Any:
    """Row softmax in float32."""
    return cuvecops.softmax(x, out=out)


def _reduce_inputs(rng: np.random.Generator, n: int, dtype: str) -> dict[str, Any]:
    if dtype.startswith("int"):
        x = rng.integers(-1000, 1000, size=n, dtype=dtype)
    else:
        x = rng.standard_normal(n).astype(dtype)
    torch = _cuda_torch()
    if torch is None:
        return {"x": x}
    xd = _to_gpu(torch, x)
    total = torch.int64 if dtype.startswith("int") else torch.float64
    return {"x": xd, "out": torch.empty((), dtype=total, device=xd.device)}


@case(
    params={"n": [1 << 18, 1 << 24], "dtype": ["float32", "int64"]},
    setup=_reduce_inputs,
    bytes=lambda n, dtype: n * np.dtype(dtype).itemsize,
    ops=lambda n, dtype: n,
)
def reduce_sum(x: Any, out: Any = None) -> Any:
    """Sum of all values; ops = elements summed (on the GPU the total stays there, in out)."""
    return cuvecops.reduce_sum(x, out=out)
