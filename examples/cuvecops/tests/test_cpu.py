"""The NumPy fallbacks against float64 references, and the public ops on the CPU backend."""

from __future__ import annotations

import cuvecops
import numpy as np
import pytest
from cuvecops import cpu
from references import saxpy_ref, softmax_ref

SIZES = (0, 1, 7, 31, 1000, 4097)


@pytest.mark.parametrize("n", SIZES)
def test_saxpy_matches_reference(rng: np.random.Generator, n: int) -> None:
    x = rng.uniform(-10, 10, n).astype(np.float32)
    y = rng.uniform(-10, 10, n).astype(np.float32)
    out = cpu.saxpy(2.5, x, y)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, saxpy_ref(2.5, x, y), rtol=1.3e-6, atol=1e-5)


def test_saxpy_rejects_mismatched_shapes() -> None:
    with pytest.raises(ValueError, match="shape"):
        cpu.saxpy(1.0, np.ones(3), np.ones(4))


@pytest.mark.parametrize(("rows", "cols"), [(1, 1), (3, 7), (17, 257), (4, 1000)])
def test_softmax_matches_reference(rng: np.random.Generator, rows: int, cols: int) -> None:
    x = rng.uniform(-50, 50, (rows, cols)).astype(np.float32)
    out = cpu.softmax(x)
    np.testing.assert_allclose(out, softmax_ref(x), rtol=1.3e-6, atol=1e-6)
    np.testing.assert_allclose(out.sum(axis=-1), 1.0, rtol=1e-5)


def test_softmax_is_stable_for_large_inputs() -> None:
    x = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1000.0, -1000.0]], dtype=np.float32)
    out = cpu.softmax(x)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out, softmax_ref(x), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_reduce_sum_each_type(rng: np.random.Generator, dtype: str) -> None:
    if dtype.startswith("float"):
        x = rng.uniform(-1, 1, 10_001).astype(dtype)
        assert cpu.reduce_sum(x) == pytest.approx(float(np.sum(x.astype(np.float64))), rel=1e-12)
    else:
        x = rng.integers(-(2**20), 2**20, 10_001).astype(dtype)
        total = cpu.reduce_sum(x)
        assert isinstance(total, int)
        assert total == int(x.astype(np.int64).sum())


def test_reduce_sum_int32_does_not_overflow() -> None:
    x = np.full(4, 2**31 - 1, dtype=np.int32)
    assert cpu.reduce_sum(x) == 4 * (2**31 - 1)


def test_reduce_sum_rejects_other_types() -> None:
    with pytest.raises(TypeError, match="int16"):
        cpu.reduce_sum(np.ones(3, dtype=np.int16))


def test_public_ops_give_right_answers_on_this_backend(rng: np.random.Generator) -> None:
    x = rng.uniform(-3, 3, (5, 33)).astype(np.float32)
    np.testing.assert_allclose(cuvecops.softmax(x), softmax_ref(x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        cuvecops.saxpy(-1.5, x, x), saxpy_ref(-1.5, x, x), rtol=1e-5, atol=1e-5
    )
    assert cuvecops.reduce_sum(np.arange(100, dtype=np.int32)) == 4950
    assert cuvecops.backend().startswith(("cpu: ", "cuda: "))
