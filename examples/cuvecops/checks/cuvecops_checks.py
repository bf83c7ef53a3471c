"""cuship check declarations for cuvecops: each op's entry points per engine and its reference.

Kernel modules (torch, triton, numba, the compiled extension) are imported inside the entry
points, so that each engine's worker imports only what it runs, and after cuship has set
TRITON_INTERPRET / NUMBA_ENABLE_CUDASIM for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from cuship.check import Impl, Invariant, Op, Scalar, Tensor, edge_sizes

F64 = np.ndarray[Any, np.dtype[np.float64]]


# --- references: float64 on the CPU -------------------------------------------------------------
def saxpy_ref(a: float, x: F64, y: F64) -> F64:
    return a * x + y


def saxpy_scale(a: float, x: F64, y: F64) -> F64:
    """The terms' magnitudes: float32 rounds a*x and y, so where they cancel the result alone
    is too small a yardstick for the round-off (large inputs: 2.5 * 1e4 - 2.5e4 + 6)."""
    return np.abs(a * x) + np.abs(y)


def add_ref(x: F64, y: F64) -> F64:
    return x + y


def softmax_ref(x: F64) -> F64:
    if x.size == 0:
        return x.copy()
    exps = np.exp(x - x.max(axis=-1, keepdims=True))
    out: F64 = exps / exps.sum(axis=-1, keepdims=True)
    return out


def reduce_sum_ref(x: Any) -> Any:
    return np.sum(x)


# --- invariants -----------------------------------------------------------------------------------
def rows_sum_to_one(inputs: Mapping[str, Any], out: Any, rtol: float, atol: float) -> str | None:
    if out.size == 0:
        return None
    sums = out.sum(axis=-1)
    bound = rtol + atol * out.shape[-1]
    worst = int(np.argmax(np.abs(sums - 1.0)))
    if not abs(sums.flat[worst] - 1.0) <= bound:
        return f"row {worst} sums to {sums.flat[worst]!r} (allowed 1 ± {bound:.3g})"
    return None


def within_unit_interval(
    inputs: Mapping[str, Any], out: Any, rtol: float, atol: float
) -> str | None:
    bad = (out < -atol) | (out > 1 + atol)
    if bad.any():
        return f"{int(bad.sum())} values outside [0, 1], e.g. {out[bad].flat[0]!r}"
    return None


# --- native (NumPy) entry points -------------------------------------------------------------------
def saxpy_native(a: float, x: Any, y: Any, out: Any) -> None:
    from cuvecops import cpu

    out[...] = cpu.saxpy(a, x, y)


def add_native(x: Any, y: Any, out: Any) -> None:
    np.add(x, y, out=out)


def softmax_native(x: Any, out: Any) -> None:
    from cuvecops import cpu

    out[...] = cpu.softmax(x)


def reduce_sum_native(x: Any) -> float | int:
    from cuvecops import cpu

    return cpu.reduce_sum(x)


# --- Triton entry points (torch tensors; poisoned `out` passed in) --------------------------------
def saxpy_triton(a: float, x: Any, y: Any, out: Any) -> None:
    import triton
    from cuvecops import triton_kernels as tk

    n = x.numel()
    if n:
        grid = (triton.cdiv(n, tk.SAXPY_BLOCK),)
        tk.saxpy_kernel[grid](x, y, out, float(a), n, BLOCK=tk.SAXPY_BLOCK)


def add_triton(x: Any, y: Any, out: Any) -> None:
    saxpy_triton(1.0, x, y, out)


def _softmax_launch(kernel: Any, x: Any, out: Any) -> None:
    from cuvecops import triton_kernels as tk

    rows, cols = x.shape
    if rows and cols:
        block = tk.softmax_block(cols)
        kernel[(rows,)](x, out, x.stride(0), out.stride(0), cols, BLOCK=block)


def softmax_triton(x: Any, out: Any) -> None:
    from cuvecops import triton_kernels as tk

    _softmax_launch(tk.softmax_kernel, x, out)


def softmax_broken_triton(x: Any, out: Any) -> None:
    from cuvecops import broken

    _softmax_launch(broken.softmax_off_by_one_kernel, x, out)


# --- Numba entry points (NumPy arrays; tiny grids for the simulator) ------------------------------
def saxpy_numba(a: float, x: Any, y: Any, out: Any) -> None:
    from cuvecops import numba_kernels as nk

    cuda = nk.cuda
    d_out = cuda.to_device(out)
    nk.saxpy_kernel[2, 32](np.float32(a), cuda.to_device(x), cuda.to_device(y), d_out)
    d_out.copy_to_host(out)


def reduce_sum_numba(x: Any) -> float:
    from cuvecops import numba_kernels as nk

    return nk.reduce_sum(x, blocks=2)


# --- the compiled CUDA extension (GPU only) -------------------------------------------------------
def _cuda() -> Any:
    import cuvecops

    module = cuvecops._cuda_module()
    if module is None:
        raise RuntimeError(f"cuvecops CUDA backend unusable: {cuvecops.backend()}")
    return module


def saxpy_cuda(a: float, x: Any, y: Any, out: Any) -> None:
    _cuda().saxpy(float(a), x, y, out)


def softmax_cuda(x: Any, out: Any) -> None:
    rows, cols = x.shape
    _cuda().softmax_rows(x, rows, cols, out)


def reduce_sum_cuda(x: Any) -> float | int:
    return _cuda().reduce_sum(x)  # type: ignore[no-any-return]


# --- the ops ----------------------------------------------------------------------------------------
_VECTOR_SHAPES = tuple({"n": n} for n in (1, 7, 1023, 1025, 3079))
_VECTOR_EXTENDED = tuple({"n": n} for n in (0, *edge_sizes(1024), 65537))
_EVERY_VALUE = ("normal", "uniform", "large", "denormal", "zeros", "inf", "nan")

saxpy = Op(
    name="saxpy",
    description="out = a * x + y",
    reference=saxpy_ref,
    scale=saxpy_scale,
    inputs=(
        Scalar(name="a", values=(2.5, -1.0, 0.0)),
        Tensor(name="x", dims=("n",)),
        Tensor(name="y", dims=("n",)),
    ),
    outputs=(Tensor(name="out", dims=("n",)),),
    shapes=_VECTOR_SHAPES,
    extended_shapes=_VECTOR_EXTENDED,
    fuzz_dims={"n": (1, 5000)},
    dtypes=("float32", "float16", "bfloat16"),
    distributions=_EVERY_VALUE,
    impls=(
        Impl(kind="native", fn=saxpy_native, dtypes=("float32",)),
        Impl(kind="triton", fn=saxpy_triton, bf16_upcast=True),
        Impl(kind="numba", fn=saxpy_numba, dtypes=("float32",)),
        Impl(kind="cuda", fn=saxpy_cuda, dtypes=("float32",)),
    ),
)

add = Op(
    name="add",
    description="out = x + y (Triton saxpy with a = 1)",
    reference=add_ref,
    inputs=(Tensor(name="x", dims=("n",)), Tensor(name="y", dims=("n",))),
    outputs=(Tensor(name="out", dims=("n",)),),
    shapes=_VECTOR_SHAPES,
    extended_shapes=_VECTOR_EXTENDED,
    fuzz_dims={"n": (1, 5000)},
    dtypes=("float32", "float16", "bfloat16"),
    distributions=_EVERY_VALUE,
    impls=(
        Impl(kind="native", fn=add_native),
        Impl(kind="triton", fn=add_triton, bf16_upcast=True),
    ),
)

_SOFTMAX_SHAPES = (
    {"rows": 1, "cols": 1},
    {"rows": 3, "cols": 7},
    {"rows": 4, "cols": 33},
    {"rows": 2, "cols": 1025},
)
_SOFTMAX_EXTENDED = (
    {"rows": 0, "cols": 8},
    {"rows": 5, "cols": 1024},
    {"rows": 64, "cols": 129},
    {"rows": 1, "cols": 4099},
)
_SOFTMAX_INVARIANTS = (
    Invariant(name="rows sum to 1", check=rows_sum_to_one),
    Invariant(name="values in [0, 1]", check=within_unit_interval),
)

softmax = Op(
    name="softmax",
    description="row softmax over the last axis",
    reference=softmax_ref,
    inputs=(Tensor(name="x", dims=("rows", "cols")),),
    outputs=(Tensor(name="out", dims=("rows", "cols")),),
    shapes=_SOFTMAX_SHAPES,
    extended_shapes=_SOFTMAX_EXTENDED,
    fuzz_dims={"rows": (1, 9), "cols": (1, 2000)},
    dtypes=("float32", "float16", "bfloat16"),
    distributions=("normal", "uniform", "large", "denormal", "zeros"),
    invariants=_SOFTMAX_INVARIANTS,
    impls=(
        Impl(kind="native", fn=softmax_native, dtypes=("float32",)),
        Impl(kind="triton", fn=softmax_triton, bf16_upcast=True),
        Impl(kind="cuda", fn=softmax_cuda, dtypes=("float32",)),
    ),
)

softmax_broken = Op(
    name="softmax_broken",
    description="the deliberately broken Triton softmax (off-by-one load mask); never default",
    reference=softmax_ref,
    inputs=softmax.inputs,
    outputs=softmax.outputs,
    shapes=_SOFTMAX_SHAPES,
    extended_shapes=_SOFTMAX_EXTENDED,
    fuzz_dims=softmax.fuzz_dims,
    dtypes=("float32", "float16"),
    distributions=softmax.distributions,
    invariants=_SOFTMAX_INVARIANTS,
    impls=(Impl(kind="triton", fn=softmax_broken_triton),),
    default=False,
)

reduce_sum = Op(
    name="reduce_sum",
    description="sum of all values (floats summed in float64, integers in int64)",
    reference=reduce_sum_ref,
    inputs=(Tensor(name="x", dims=("n",)),),
    shapes=tuple({"n": n} for n in (1, 63, 64, 65, 1000)),
    extended_shapes=tuple({"n": n} for n in (0, 2, 127, 128, 129, 4099)),
    fuzz_dims={"n": (1, 3000)},
    dtypes=("float32", "float64", "int32", "int64"),
    distributions=_EVERY_VALUE,
    impls=(
        Impl(kind="native", fn=reduce_sum_native),
        Impl(kind="numba", fn=reduce_sum_numba, dtypes=("float32", "float64")),
        Impl(kind="cuda", fn=reduce_sum_cuda),
    ),
)
