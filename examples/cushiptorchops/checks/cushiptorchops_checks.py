"""cuship check declarations for cushiptorchops: each op's CPU and CUDA kernel against a float64
reference.

The ``native`` entry points call the op on CPU tensors (torch's dispatcher picks the CPU kernel),
the ``cuda`` ones on CUDA tensors (the CUDA kernel; GPU runs only). Both get NumPy inputs and
NaN-poisoned NumPy outputs from cuship and copy the op's result into them. torch and the
package are imported inside the entry points, so a broken build fails its cases instead of the
whole run.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cuship.check import Impl, Op, Scalar, Tensor, edge_sizes

F64 = np.ndarray[Any, np.dtype[np.float64]]

_erf = np.frompyfunc(math.erf, 1, 1)


# --- references: float64 on the CPU -------------------------------------------------------------
def bias_gelu_ref(x: F64, bias: F64) -> F64:
    v = x + bias
    out: F64 = 0.5 * v * (1.0 + np.asarray(_erf(v / math.sqrt(2.0)), dtype=np.float64))
    return out


def rms_norm_ref(x: F64, weight: F64, eps: float) -> F64:
    if x.size == 0:
        return x.copy()
    out: F64 = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight
    return out


# --- entry points ---------------------------------------------------------------------------------
def _run(op: str, device: str, out: Any, *arrays: Any, **scalars: float) -> None:
    """Call ``cushiptorchops.<op>`` on ``arrays`` moved to ``device``; copy the result to ``out``."""
    import cushiptorchops
    import torch

    tensors = [torch.from_numpy(np.ascontiguousarray(a)).to(device) for a in arrays]
    result = getattr(cushiptorchops, op)(*tensors, **scalars)
    out[...] = result.cpu().numpy()


def bias_gelu_cpu(x: Any, bias: Any, out: Any) -> None:
    _run("bias_gelu", "cpu", out, x, bias)


def bias_gelu_cuda(x: Any, bias: Any, out: Any) -> None:
    _run("bias_gelu", "cuda", out, x, bias)


def rms_norm_cpu(x: Any, weight: Any, eps: float, out: Any) -> None:
    _run("rms_norm", "cpu", out, x, weight, eps=eps)


def rms_norm_cuda(x: Any, weight: Any, eps: float, out: Any) -> None:
    _run("rms_norm", "cuda", out, x, weight, eps=eps)


# --- the ops ----------------------------------------------------------------------------------------
_ROW_SHAPES = (
    {"rows": 1, "cols": 1},
    {"rows": 3, "cols": 7},
    {"rows": 4, "cols": 33},
    {"rows": 2, "cols": 1025},
)
_ROW_EXTENDED = (
    {"rows": 0, "cols": 8},
    *({"rows": 3, "cols": n} for n in edge_sizes(256)),
    {"rows": 64, "cols": 129},
    {"rows": 1, "cols": 4099},
)
# float16 and bfloat16 inputs reach the entry points as NumPy float16 and float32 arrays; the CPU
# kernel would see bfloat16 data as float32, so bfloat16 is left out.
_DTYPES = ("float32", "float64", "float16")
_VALUES = ("normal", "uniform", "large", "denormal", "zeros")

bias_gelu = Op(
    name="bias_gelu",
    description="out = gelu(x + bias), exact (erf) GELU, bias over the last dimension",
    reference=bias_gelu_ref,
    inputs=(Tensor(name="x", dims=("rows", "cols")), Tensor(name="bias", dims=("cols",))),
    outputs=(Tensor(name="out", dims=("rows", "cols")),),
    shapes=_ROW_SHAPES,
    extended_shapes=_ROW_EXTENDED,
    fuzz_dims={"rows": (1, 9), "cols": (1, 2000)},
    dtypes=_DTYPES,
    distributions=_VALUES,
    impls=(
        Impl(kind="native", fn=bias_gelu_cpu),
        Impl(kind="cuda", fn=bias_gelu_cuda),
    ),
)

rms_norm = Op(
    name="rms_norm",
    description="out = x / sqrt(mean(x^2, -1) + eps) * weight",
    reference=rms_norm_ref,
    inputs=(
        Tensor(name="x", dims=("rows", "cols")),
        Tensor(name="weight", dims=("cols",)),
        Scalar(name="eps", values=(1e-6, 1e-5)),
    ),
    outputs=(Tensor(name="out", dims=("rows", "cols")),),
    shapes=_ROW_SHAPES,
    extended_shapes=_ROW_EXTENDED,
    fuzz_dims={"rows": (1, 9), "cols": (1, 2000)},
    dtypes=_DTYPES,
    distributions=_VALUES,
    # The row's sum of squares is accumulated in float32 (float16 inputs too): a few float32
    # ulps per output beyond torch.testing's float32 default.
    tolerances={"float32": (1e-5, 1e-5)},
    impls=(
        Impl(kind="native", fn=rms_norm_cpu),
        Impl(kind="cuda", fn=rms_norm_cuda),
    ),
)
