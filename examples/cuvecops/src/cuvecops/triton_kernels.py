"""Triton versions of saxpy / vector add and row softmax, with launchers taking torch tensors.

They run on a GPU, or on the CPU under the Triton interpreter: set ``TRITON_INTERPRET=1``
before this module is imported and pass CPU tensors. Loads and stores are masked, so any length
works; arithmetic is done in float32 whatever the storage type (fp16, bf16, fp32).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

SAXPY_BLOCK = 1024
MAX_SOFTMAX_BLOCK = 1 << 16


@triton.jit  # type: ignore[untyped-decorator]
def saxpy_kernel(x_ptr, y_ptr, out_ptr, a, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    out = a * x + y
    tl.store(out_ptr + offs, out.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit  # type: ignore[untyped-decorator]
def softmax_kernel(  # type: ignore[no-untyped-def]
    x_ptr, out_ptr, x_row_stride, out_row_stride, cols, BLOCK: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * x_row_stride + offs, mask=mask, other=-float("inf"))
    x = x.to(tl.float32)
    shifted = x - tl.max(x, axis=0)
    num = tl.exp(shifted)
    out = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + offs, out.to(out_ptr.dtype.element_ty), mask=mask)


def _check_pair(x: torch.Tensor, y: torch.Tensor) -> None:
    if x.shape != y.shape:
        raise ValueError(f"x has shape {tuple(x.shape)} but y has shape {tuple(y.shape)}")
    if x.device != y.device or x.dtype != y.dtype:
        raise ValueError(f"x is {x.dtype} on {x.device} but y is {y.dtype} on {y.device}")


def saxpy(a: float, x: torch.Tensor, y: torch.Tensor, *, block: int = SAXPY_BLOCK) -> torch.Tensor:
    """``a * x + y`` elementwise (any shape; computed in float32, stored in x's dtype)."""
    _check_pair(x, y)
    xc, yc = x.contiguous(), y.contiguous()
    out = torch.empty_like(xc)
    n = xc.numel()
    if n:
        grid = (triton.cdiv(n, block),)
        saxpy_kernel[grid](xc, yc, out, float(a), n, BLOCK=block)
    return out


def add(x: torch.Tensor, y: torch.Tensor, *, block: int = SAXPY_BLOCK) -> torch.Tensor:
    """``x + y`` elementwise: saxpy with a = 1."""
    return saxpy(1.0, x, y, block=block)


def softmax_block(cols: int) -> int:
    """The power-of-two tile that holds one row of ``cols`` values."""
    block = triton.next_power_of_2(max(cols, 1))
    if block > MAX_SOFTMAX_BLOCK:
        raise ValueError(
            f"softmax: rows of {cols} values exceed the one-tile limit {MAX_SOFTMAX_BLOCK}"
        )
    return int(block)


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension, one program per row, computed in float32."""
    if x.dim() == 0:
        raise ValueError("softmax: expected at least one dimension, got a scalar")
    cols = x.shape[-1]
    x2 = x.reshape(-1, cols).contiguous() if cols else x.reshape(0, 0)
    out = torch.empty_like(x2)
    rows = x2.shape[0]
    if rows and cols:
        block = softmax_block(cols)
        softmax_kernel[(rows,)](x2, out, x2.stride(0), out.stride(0), cols, BLOCK=block)
    return out.reshape(x.shape)
