"""cuvecops: saxpy, row softmax and typed sums on a CUDA GPU, with NumPy fallbacks.

The ops run on the GPU when the compiled extension imports and a device is present, else on the
CPU; :func:`backend` says which and why. Set ``CUVECOPS_BACKEND=cpu`` to force the CPU, or
``CUVECOPS_BACKEND=cuda`` to make the ops fail loudly when the GPU cannot be used.

Host arrays (NumPy, lists) give NumPy results. Arrays already on the GPU (torch CUDA tensors,
``__cuda_array_interface__``, CUDA DLPack) are worked on in place, with no host copy, and give
device results (see :mod:`cuvecops._device`).
"""

from __future__ import annotations

import os
from functools import cache
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from cuvecops import _device, cpu
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


# Host arrays (anything NumPy takes) or arrays already in CUDA memory.
ArrayIn = npt.ArrayLike | _device.DeviceArrayLike


def _host(x: ArrayIn) -> npt.ArrayLike:
    """``x`` once it is known not to be a device array."""
    return cast("npt.ArrayLike", x)


def _device_module(op: str) -> CudaOps:
    """The extension, for arguments already on the GPU: there is no CPU fallback for those."""
    module = _cuda_module()
    if module is None:
        raise RuntimeError(
            f"cuvecops.{op}: got CUDA device arrays but the CUDA backend is unusable here "
            f"({backend()}); pass host arrays to use the CPU"
        )
    return module


def _on_device(*arrays: object) -> bool:
    return any(_device.is_device_array(a) for a in arrays)


def _host_only(op: str, out: object) -> None:
    if out is not None:
        raise TypeError(f"cuvecops.{op}: out= is for device arrays; host inputs get a new array")


def saxpy(a: float, x: ArrayIn, y: ArrayIn, *, out: Any = None) -> Any:
    """``a * x + y`` over float32 arrays of the same shape.

    Host inputs give a new float32 NumPy array. Device inputs (float32, C-contiguous) give
    ``out`` filled, or a new tensor for torch inputs.
    """
    if _on_device(x, y, out):
        return _device.saxpy(_device_module("saxpy"), a, x, y, out)
    _host_only("saxpy", out)
    module = _cuda_module()
    if module is None:
        return cpu.saxpy(a, _host(x), _host(y))
    xs = cpu.as_float32("x", _host(x))
    ys = cpu.as_float32("y", _host(y))
    if xs.shape != ys.shape:
        raise ValueError(f"saxpy: x has shape {xs.shape} but y has shape {ys.shape}")
    raw = module.saxpy(float(a), xs, ys)
    return np.frombuffer(raw, dtype=np.float32).reshape(xs.shape)


def softmax(x: ArrayIn, *, out: Any = None) -> Any:
    """Numerically stable softmax over the last axis (float32); device inputs as for saxpy."""
    if _on_device(x, out):
        return _device.softmax(_device_module("softmax"), x, out)
    _host_only("softmax", out)
    module = _cuda_module()
    if module is None:
        return cpu.softmax(_host(x))
    xs = cpu.as_float32("x", _host(x))
    if xs.ndim == 0:
        raise ValueError("softmax: expected at least one dimension, got a scalar")
    cols = xs.shape[-1]
    rows = xs.size // cols if cols else 0
    raw = module.softmax_rows(xs, rows, cols)
    return np.frombuffer(raw, dtype=np.float32).reshape(xs.shape)


def reduce_sum(x: ArrayIn, *, out: Any = None) -> Any:
    """Sum of float32/float64 (-> float, summed in float64) or int32/int64 (-> int) values.

    A device input gives a one-element device array instead (float64 or int64): ``out``, or a
    0-d tensor for torch inputs, so that no host synchronisation is needed.
    """
    if _on_device(x, out):
        return _device.reduce_sum(_device_module("reduce_sum"), x, out)
    _host_only("reduce_sum", out)
    module = _cuda_module()
    if module is None:
        return cpu.reduce_sum(_host(x))
    arr = np.ascontiguousarray(np.asarray(_host(x)))
    if arr.dtype not in cpu.REDUCE_DTYPES:
        return cpu.reduce_sum(arr)  # raises the same TypeError as the CPU path
    return module.reduce_sum(arr)
