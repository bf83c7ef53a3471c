"""cuship bench cases for cuvecops: each op on seeded random inputs, with its work model.

The ops run on the GPU when the compiled extension and a device are there, else on the NumPy
fallbacks, so the same cases time the CPU path on CI and the CUDA path on a GPU runner.

``CUVECOPS_PLANT_SLOWDOWN=1`` plants a regression for the gate demo: saxpy then works on arrays
18 % longer than its work model says, so it runs about 10-20 % slower per call.
"""

from __future__ import annotations

import os
from typing import Any

import cuvecops
import numpy as np

from cuship.bench import case

PLANT_ENV = "CUVECOPS_PLANT_SLOWDOWN"


def _saxpy_inputs(rng: np.random.Generator, n: int) -> dict[str, Any]:
    if os.environ.get(PLANT_ENV, "") not in ("", "0"):
        n = int(n * 1.18)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    return {"a": float(rng.uniform(0.5, 2.0)), "x": x, "y": y}


@case(
    params={"n": [1 << 18]},
    setup=_saxpy_inputs,
    bytes=lambda n: 3 * 4 * n,
    flops=lambda n: 2 * n,
)
def saxpy(a: float, x: Any, y: Any) -> Any:
    """a * x + y in float32: reads x and y, writes the result."""
    return cuvecops.saxpy(a, x, y)


def _softmax_inputs(rng: np.random.Generator, rows: int, cols: int) -> dict[str, Any]:
    return {"x": rng.standard_normal((rows, cols), dtype=np.float32) * 4}


@case(
    params={"rows": [128], "cols": [512]},
    setup=_softmax_inputs,
    bytes=lambda rows, cols: 2 * 4 * rows * cols,
    flops=lambda rows, cols: 5 * rows * cols,
)
def softmax(x: Any) -> Any:
    """Row softmax in float32."""
    return cuvecops.softmax(x)


def _reduce_inputs(rng: np.random.Generator, n: int, dtype: str) -> dict[str, Any]:
    if dtype.startswith("int"):
        return {"x": rng.integers(-1000, 1000, size=n, dtype=dtype)}
    return {"x": rng.standard_normal(n).astype(dtype)}


@case(
    params={"n": [1 << 18], "dtype": ["float32", "int64"]},
    setup=_reduce_inputs,
    bytes=lambda n, dtype: n * np.dtype(dtype).itemsize,
    ops=lambda n, dtype: n,
)
def reduce_sum(x: Any) -> Any:
    """Sum of all values; ops = elements summed."""
    return cuvecops.reduce_sum(x)
