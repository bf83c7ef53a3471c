"""Numba CUDA kernels against references (the CUDA simulator without a GPU: tiny grids).

Skipped, with the error, where numba or numba.cuda cannot import or cannot compile a kernel
(numba-cuda 0.30 under NumPy 2.5 imports, then fails at its first compile).
"""

from __future__ import annotations

import numpy as np
import pytest
from optional import first_kernel_or_skip, import_or_skip
from references import saxpy_ref

numba_kernels = import_or_skip("cuvecops.numba_kernels")
first_kernel_or_skip(
    "numba",
    lambda: numba_kernels.saxpy(1.0, np.zeros(1, np.float32), np.zeros(1, np.float32), blocks=1),
)


@pytest.mark.parametrize("n", [1, 100, 257])
def test_saxpy(rng: np.random.Generator, n: int) -> None:
    x = rng.uniform(-1, 1, n).astype(np.float32)
    y = rng.uniform(-1, 1, n).astype(np.float32)
    out = numba_kernels.saxpy(3.0, x, y, blocks=2, threads=32)
    np.testing.assert_allclose(out, saxpy_ref(3.0, x, y), rtol=1.3e-6, atol=1e-5)


@pytest.mark.parametrize("n", [1, 63, 500])
def test_block_reduction(rng: np.random.Generator, n: int) -> None:
    x = rng.uniform(-1, 1, n)
    total = numba_kernels.reduce_sum(x, blocks=2)
    assert total == pytest.approx(float(x.sum()), rel=1e-12, abs=1e-12)


def test_reduction_of_ones_is_exact() -> None:
    assert numba_kernels.reduce_sum(np.ones(300, dtype=np.float32), blocks=3) == 300.0
