"""cuship bench cases for cushiptorchops: each op on seeded random float32 inputs, with its work
model.

Where torch sees a CUDA device the inputs live on it, so a sample times the CUDA kernel on
device-resident tensors (torch's dispatcher picks it from the device); elsewhere the CPU kernel
is timed on CPU tensors. The work models hold for both.
"""

from __future__ import annotations

from typing import Any

import cushiptorchops
import numpy as np
import torch

from cuship.bench import case

F32 = 4  # bytes per float32


def _device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def _tensor(rng: np.random.Generator, *shape: int) -> torch.Tensor:
    values = torch.from_numpy(rng.standard_normal(shape, dtype=np.float32)).to(_device())
    if values.is_cuda:
        torch.cuda.synchronize()
    return values


def _rows(rng: np.random.Generator, rows: int, cols: int, vector: str) -> dict[str, Any]:
    return {"x": _tensor(rng, rows, cols), vector: _tensor(rng, cols)}


@case(
    params={"rows": [128, 2048], "cols": [1024]},
    setup=lambda rng, rows, cols: _rows(rng, rows, cols, "bias"),
    bytes=lambda rows, cols: F32 * (2 * rows * cols + cols),
    flops=lambda rows, cols: 10 * rows * cols,
    peak_dtype="fp32",
)
def bias_gelu(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """gelu(x + bias) in float32: reads x and bias, writes the result."""
    return cushiptorchops.bias_gelu(x, bias)


@case(
    params={"rows": [128, 2048], "cols": [1024]},
    setup=lambda rng, rows, cols: _rows(rng, rows, cols, "weight"),
    bytes=lambda rows, cols: F32 * (2 * rows * cols + cols),
    flops=lambda rows, cols: 4 * rows * cols,
    peak_dtype="fp32",
)
def rms_norm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """RMSNorm over rows of float32: reads x and weight, writes the result."""
    return cushiptorchops.rms_norm(x, weight, 1e-6)
