"""Pure NumPy versions of the cuvecops ops: the fallback when no CUDA device is usable.

They follow the CUDA kernels' contracts (float32 in, float32 out for saxpy and softmax; sums of
floats in float64 and of integers in int64) so either backend can stand in for the other.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float32]

REDUCE_DTYPES = (np.float32, np.float64, np.int32, np.int64)


def as_float32(name: str, x: npt.ArrayLike) -> FloatArray:
    """``x`` as a C-contiguous float32 array; refuses values that would lose their meaning."""
    arr = np.asarray(x)
    if arr.dtype.kind not in "fiub":
        raise TypeError(f"{name}: expected real numbers, got dtype {arr.dtype!s}")
    return np.ascontiguousarray(arr, dtype=np.float32)


def saxpy(a: float, x: npt.ArrayLike, y: npt.ArrayLike) -> FloatArray:
    """``a * x + y`` in float32."""
    xs = as_float32("x", x)
    ys = as_float32("y", y)
    if xs.shape != ys.shape:
        raise ValueError(f"saxpy: x has shape {xs.shape} but y has shape {ys.shape}")
    out: FloatArray = np.float32(a) * xs + ys
    return out


def softmax(x: npt.ArrayLike) -> FloatArray:
    """Numerically stable softmax over the last axis, in float32."""
    xs = as_float32("x", x)
    if xs.ndim == 0:
        raise ValueError("softmax: expected at least one dimension, got a scalar")
    if xs.size == 0:
        return xs.copy()
    shifted = xs - xs.max(axis=-1, keepdims=True)
    exps = np.exp(shifted)
    out: FloatArray = exps / exps.sum(axis=-1, keepdims=True)
    return out


def reduce_sum(x: npt.ArrayLike) -> float | int:
    """Sum of all values: float32/float64 summed in float64, int32/int64 in int64."""
    arr = np.asarray(x)
    if arr.dtype not in REDUCE_DTYPES:
        raise TypeError(
            f"reduce_sum: expected float32, float64, int32 or int64 values, got dtype {arr.dtype!s}"
        )
    if arr.dtype.kind == "f":
        return float(np.sum(arr, dtype=np.float64))
    return int(np.sum(arr, dtype=np.int64))
