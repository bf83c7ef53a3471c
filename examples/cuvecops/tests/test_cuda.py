"""The compiled extension on a real GPU.

Marked ``gpu(min_cc="8.0")``: cuship.toml builds SASS for 8.0 and newer, so older cards cannot
run it. With cuship installed its pytest plugin skips these tests where no such GPU is (and
``--require-gpu`` turns that skip into a failure on GPU runners).
"""

from __future__ import annotations

import importlib
from typing import cast

import cuvecops
import numpy as np
import pytest
from cuvecops._loader import CudaOps
from references import saxpy_ref, softmax_ref

pytestmark = pytest.mark.gpu(min_cc="8.0")


@pytest.fixture(scope="module")
def ext() -> CudaOps:
    module = cast(CudaOps, importlib.import_module("cuvecops._cuda"))
    count, error = module.probe()
    assert count > 0, f"no CUDA device ({error}): run the gpu tests where there is one"
    return module


def test_public_ops_dispatch_to_cuda(ext: CudaOps) -> None:
    assert cuvecops.backend().startswith("cuda: "), cuvecops.backend()
    x = np.linspace(-5, 5, 1001, dtype=np.float32)
    np.testing.assert_allclose(cuvecops.saxpy(2.0, x, x), saxpy_ref(2.0, x, x), rtol=1.3e-6)


@pytest.mark.parametrize("n", [0, 1, 1000, 1 << 20])
def test_saxpy(ext: CudaOps, rng: np.random.Generator, n: int) -> None:
    x = rng.uniform(-1, 1, n).astype(np.float32)
    y = rng.uniform(-1, 1, n).astype(np.float32)
    out = np.frombuffer(ext.saxpy(2.0, x, y), dtype=np.float32)
    np.testing.assert_allclose(out, saxpy_ref(2.0, x, y), rtol=1.3e-6, atol=1e-5)


def test_saxpy_fills_out(ext: CudaOps) -> None:
    x = np.arange(5, dtype=np.float32)
    out = np.zeros(5, dtype=np.float32)
    assert ext.saxpy(1.0, x, x, out) is out
    np.testing.assert_array_equal(out, 2 * x)


@pytest.mark.parametrize(("rows", "cols"), [(1, 1), (7, 300), (128, 4096)])
def test_softmax_rows(ext: CudaOps, rng: np.random.Generator, rows: int, cols: int) -> None:
    x = rng.uniform(-80, 80, (rows, cols)).astype(np.float32)
    out = np.frombuffer(ext.softmax_rows(x, rows, cols), dtype=np.float32).reshape(rows, cols)
    np.testing.assert_allclose(out, softmax_ref(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_reduce_sum(ext: CudaOps, rng: np.random.Generator, dtype: str) -> None:
    x = rng.uniform(-100, 100, 1_000_003).astype(dtype)
    expected = np.sum(x, dtype=np.float64 if dtype.startswith("float") else np.int64)
    total = ext.reduce_sum(x)
    if dtype.startswith("int"):
        assert total == int(expected)
    else:
        assert total == pytest.approx(float(expected), rel=1e-9)


def test_wrong_type_is_a_type_error(ext: CudaOps) -> None:
    with pytest.raises(TypeError, match="float32"):
        ext.saxpy(1.0, np.ones(3, dtype=np.float64), np.ones(3, dtype=np.float64))


def test_shape_mismatch_is_a_value_error(ext: CudaOps) -> None:
    with pytest.raises(ValueError, match="rows"):
        ext.softmax_rows(np.ones(6, dtype=np.float32), 4, 2)
