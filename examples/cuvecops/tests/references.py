"""float64 references the kernels are compared with."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]


def saxpy_ref(a: float, x: npt.ArrayLike, y: npt.ArrayLike) -> F64:
    return float(a) * np.asarray(x, dtype=np.float64) + np.asarray(y, dtype=np.float64)


def softmax_ref(x: npt.ArrayLike) -> F64:
    x64 = np.asarray(x, dtype=np.float64)
    exps = np.exp(x64 - x64.max(axis=-1, keepdims=True))
    out: F64 = exps / exps.sum(axis=-1, keepdims=True)
    return out


# (rtol, atol) per dtype, as torch.testing.assert_close uses them.
TOLERANCES = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
}
