"""cuvecops: saxpy, row softmax and typed sums on a CUDA GPU, with NumPy fallbacks.

The ops run on the GPU when the compiled extension imports and a device is present, else on the
CPU; :func:`backend` says which and why. Set ``CUVECOPS_BACKEND=cpu`` to force the CPU, or
``CUVECOPS_BACKEND=cuda`` to make the ops fail loudly when the GPU cannot be used.
"""

from __future__ import annotations

import os
from functools import cache

import numpy as np
import numpy.typing as npt

from cuvecops import cpu
from cuvecops._loader import BACKEND_ENV, Backend, CudaOps, detect

__version__ = "0.1.0"
__all__ = ["Backend", "__version__", "backend", "backend_info", "reduce_sum", "saxpy", "softmax"]


@cache
def backend_info() -> Backend:
    """The backend chosen for this process (decided once, on first use)."""
    return detect(os.environ)


def backend() -> str:
    """``"cuda: ..."`` or ``"cpu: <reason>"``."""
    return backend_info().describe()


def _cuda_module() -> CudaOps | None:
    info = backend_info()
    if info.module is None and os.environ.get(BACKEND_ENV, "").strip().lower() == "cuda":
        raise RuntimeError(f"{BACKEND_ENV}=cuda but the CUDA backend is unusable: {info.reason}")
    return info.module


def saxpy(a: float, x: npt.ArrayLike, y: npt.ArrayLike) -> cpu.FloatArray:
    """``a * x + y`` over float32 arrays of the same shape."""
    module = _cuda_module()
    if module is None:
        return cpu.saxpy(a, x, y)
    xs = cpu.as_float32("x", x)
    ys = cpu.as_float32("y", y)
    if xs.shape != ys.shape:
        raise ValueError(f"saxpy: x has shape {xs.shape} but y has shape {ys.shape}")
    raw = module.saxpy(float(a), xs, ys)
    return np.frombuffer(raw, dtype=np.float32).reshape(xs.shape)


def softmax(x: npt.ArrayLike) -> cpu.FloatArray:
    """Numerically stable softmax over the last axis (float32)."""
    module = _cuda_module()
    if module is None:
        return cpu.softmax(x)
    xs = cpu.as_float32("x", x)
    if xs.ndim == 0:
        raise ValueError("softmax: expected at least one dimension, got a scalar")
    cols = xs.shape[-1]
    rows = xs.size // cols if cols else 0
    raw = module.softmax_rows(xs, rows, cols)
    return np.frombuffer(raw, dtype=np.float32).reshape(xs.shape)


def reduce_sum(x: npt.ArrayLike) -> float | int:
    """Sum of float32/float64 (-> float, summed in float64) or int32/int64 (-> int) values."""
    module = _cuda_module()
    if module is None:
        return cpu.reduce_sum(x)
    arr = np.ascontiguousarray(np.asarray(x))
    if arr.dtype not in cpu.REDUCE_DTYPES:
        return cpu.reduce_sum(arr)  # raises the same TypeError as the CPU path
    return module.reduce_sum(arr)
