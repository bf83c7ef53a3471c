"""Numba CUDA kernels: saxpy and a shared-memory block reduction (syncthreads, no warp intrinsics).

They run on a GPU, or in the Numba CUDA simulator: set ``NUMBA_ENABLE_CUDASIM=1`` before numba is
imported. The simulator runs one OS thread per CUDA thread, so keep grids tiny there (the
launchers take ``blocks`` and ``threads``; the loops are grid-stride, so any size is covered).
"""

from __future__ import annotations

from typing import Any

import numba.cuda
import numpy as np
import numpy.typing as npt
from numba import float64

# numba.cuda fills its namespace at import time, which a type checker cannot see.
cuda: Any = numba.cuda

# Threads per block of the reduction; the shared array needs a compile-time size.
REDUCE_THREADS = 64


@cuda.jit
def saxpy_kernel(a, x, y, out):  # type: ignore[no-untyped-def]
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, x.size, stride):
        out[i] = a * x[i] + y[i]


@cuda.jit
def block_sum_kernel(x, partials):  # type: ignore[no-untyped-def]
    shared = cuda.shared.array(REDUCE_THREADS, float64)
    tid = cuda.threadIdx.x
    acc = 0.0
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        acc += x[i]
    shared[tid] = acc
    cuda.syncthreads()
    width = REDUCE_THREADS // 2
    while width > 0:
        if tid < width:
            shared[tid] += shared[tid + width]
        cuda.syncthreads()
        width //= 2
    if tid == 0:
        partials[cuda.blockIdx.x] = shared[0]


def saxpy(
    a: float, x: npt.ArrayLike, y: npt.ArrayLike, *, blocks: int = 4, threads: int = 64
) -> npt.NDArray[np.float32]:
    """``a * x + y`` in float32 with a grid of ``blocks`` x ``threads``."""
    xs = np.ascontiguousarray(x, dtype=np.float32)
    ys = np.ascontiguousarray(y, dtype=np.float32)
    if xs.shape != ys.shape:
        raise ValueError(f"saxpy: x has shape {xs.shape} but y has shape {ys.shape}")
    d_out = cuda.device_array_like(xs)
    saxpy_kernel[blocks, threads](np.float32(a), cuda.to_device(xs), cuda.to_device(ys), d_out)
    out: npt.NDArray[np.float32] = d_out.copy_to_host()
    return out


def reduce_sum(x: npt.ArrayLike, *, blocks: int = 2) -> float:
    """Sum of float values in float64: ``blocks`` partial sums, then one block sums those."""
    xs = np.ascontiguousarray(x, dtype=np.float64).ravel()
    d_partials = cuda.device_array(blocks, dtype=np.float64)
    d_total = cuda.device_array(1, dtype=np.float64)
    block_sum_kernel[blocks, REDUCE_THREADS](cuda.to_device(xs), d_partials)
    block_sum_kernel[1, REDUCE_THREADS](d_partials, d_total)
    return float(d_total.copy_to_host()[0])
