"""A deliberately broken Triton softmax, for proving that validation catches a real bug.

The load mask is off by one (``offs < cols - 1``): the last column of every row is read as -inf,
so it comes out 0 and the other columns are normalised without it. Never use it; keep it out of
default check selections.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from cuvecops.triton_kernels import softmax_block


@triton.jit  # type: ignore[untyped-decorator]
def softmax_off_by_one_kernel(  # type: ignore[no-untyped-def]
    x_ptr, out_ptr, x_row_stride, out_row_stride, cols, BLOCK: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    load_mask = offs < cols - 1  # BUG: should be offs < cols
    x = tl.load(x_ptr + row * x_row_stride + offs, mask=load_mask, other=-float("inf"))
    x = x.to(tl.float32)
    num = tl.exp(x - tl.max(x, axis=0))
    out = num / tl.sum(num, axis=0)
    tl.store(
        out_ptr + row * out_row_stride + offs, out.to(out_ptr.dtype.element_ty), mask=offs < cols
    )


def softmax_off_by_one(x: torch.Tensor) -> torch.Tensor:
    """Same interface as :func:`cuvecops.triton_kernels.softmax`, wrong answers."""
    cols = x.shape[-1]
    x2 = x.reshape(-1, cols).contiguous()
    out = torch.empty_like(x2)
    if x2.shape[0] and cols:
        block = softmax_block(cols)
        softmax_off_by_one_kernel[(x2.shape[0],)](
            x2, out, x2.stride(0), out.stride(0), cols, BLOCK=block
        )
    return out.reshape(x.shape)
