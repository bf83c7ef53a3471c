"""float64 references of the ops, in NumPy (no torch): what every kernel is compared with."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

F64 = np.ndarray[Any, np.dtype[np.float64]]

_erf = np.frompyfunc(math.erf, 1, 1)


def bias_gelu_ref(x: Any, bias: Any) -> F64:
    """gelu(x + bias), the exact (erf) form, in float64."""
    v = np.asarray(x, dtype=np.float64) + np.asarray(bias, dtype=np.float64)
    out: F64 = 0.5 * v * (1.0 + np.asarray(_erf(v / math.sqrt(2.0)), dtype=np.float64))
    return out


def rms_norm_ref(x: Any, weight: Any, eps: float) -> F64:
    """x / sqrt(mean(x**2, -1) + eps) * weight, in float64."""
    v = np.asarray(x, dtype=np.float64)
    if v.size == 0:
        return v.copy()
    scale = 1.0 / np.sqrt(np.mean(v * v, axis=-1, keepdims=True) + eps)
    out: F64 = v * scale * np.asarray(weight, dtype=np.float64)
    return out
