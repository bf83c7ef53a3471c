"""cushiptorchops: fused bias+GELU and RMSNorm registered with torch's dispatcher.

Importing the package imports the compiled library ``cushiptorchops._C``, which registers
``torch.ops.cushiptorchops.bias_gelu`` and ``torch.ops.cushiptorchops.rms_norm`` with a CPU and a
CUDA kernel each; torch picks the kernel from the tensors' device. The functions below are thin
wrappers with the same arguments.
"""

from __future__ import annotations

from pathlib import Path

import torch  # loads libtorch and libc10 first: the library needs them and has no RPATH

from cushiptorchops import _C  # registers the ops

__version__ = "0.1.0"
__all__ = ["__version__", "bias_gelu", "library_path", "rms_norm", "variant"]


def library_path() -> Path:
    """The compiled library of this installation (``_C.cpython-*.so`` or ``_C.abi3.so``)."""
    return Path(str(_C.__file__))


def variant() -> str:
    """``"stable"`` when the library was built against torch's stable ABI, else ``"exact"``."""
    return "stable" if library_path().name.endswith(".abi3.so") else "exact"


def bias_gelu(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``gelu(x + bias)`` (exact, erf-based), ``bias`` broadcast over the last dimension of ``x``."""
    return torch.ops.cushiptorchops.bias_gelu(x, bias)  # type: ignore[no-any-return]


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """``x / sqrt(mean(x**2, -1) + eps) * weight`` over the last dimension of ``x``."""
    return torch.ops.cushiptorchops.rms_norm(x, weight, eps)  # type: ignore[no-any-return]
