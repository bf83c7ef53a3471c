"""Triton kernels against float64 references (the interpreter on CPU tensors without a GPU)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from cuvecops import triton_kernels
from references import TOLERANCES, saxpy_ref, softmax_ref

DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


@pytest.mark.parametrize("n", [1, 7, 1000, 3001])
@pytest.mark.parametrize("dtype", DTYPES, ids=_name)
def test_saxpy(rng: np.random.Generator, torch_device: str, n: int, dtype: torch.dtype) -> None:
    x = torch.tensor(rng.uniform(-4, 4, n), dtype=dtype, device=torch_device)
    y = torch.tensor(rng.uniform(-4, 4, n), dtype=dtype, device=torch_device)
    out = triton_kernels.saxpy(0.75, x, y, block=256)
    assert out.dtype == dtype and out.shape == x.shape
    ref = saxpy_ref(0.75, x.double().cpu().numpy(), y.double().cpu().numpy())
    rtol, atol = TOLERANCES[_name(dtype)]
    np.testing.assert_allclose(out.double().cpu().numpy(), ref, rtol=rtol, atol=atol)


def test_add_is_saxpy_with_one(torch_device: str) -> None:
    x = torch.arange(10, dtype=torch.float32, device=torch_device)
    assert torch.equal(triton_kernels.add(x, x).cpu(), (2 * x).cpu())


def test_saxpy_rejects_mismatched_inputs(torch_device: str) -> None:
    x = torch.zeros(4, device=torch_device)
    with pytest.raises(ValueError, match="shape"):
        triton_kernels.saxpy(1.0, x, torch.zeros(5, device=torch_device))


@pytest.mark.parametrize(("rows", "cols"), [(1, 1), (4, 7), (33, 129), (3, 1000)])
@pytest.mark.parametrize("dtype", DTYPES, ids=_name)
def test_softmax(
    rng: np.random.Generator, torch_device: str, rows: int, cols: int, dtype: torch.dtype
) -> None:
    x = torch.tensor(rng.uniform(-20, 20, (rows, cols)), dtype=dtype, device=torch_device)
    out = triton_kernels.softmax(x)
    assert out.dtype == dtype and out.shape == x.shape
    ref = softmax_ref(x.double().cpu().numpy())
    rtol, atol = TOLERANCES[_name(dtype)]
    np.testing.assert_allclose(out.double().cpu().numpy(), ref, rtol=rtol, atol=atol)


def test_softmax_large_values_stay_finite(torch_device: str) -> None:
    x = torch.tensor([[1000.0, 1001.0, 1002.0]], device=torch_device)
    out = triton_kernels.softmax(x).cpu().numpy()
    np.testing.assert_allclose(out, softmax_ref([[1000.0, 1001.0, 1002.0]]), rtol=1e-5)


def test_softmax_keeps_leading_dimensions(rng: np.random.Generator, torch_device: str) -> None:
    x = torch.tensor(rng.normal(size=(2, 3, 5)), dtype=torch.float32, device=torch_device)
    out = triton_kernels.softmax(x)
    assert out.shape == (2, 3, 5)
    np.testing.assert_allclose(
        out.cpu().numpy(), softmax_ref(x.cpu().numpy()), rtol=1e-5, atol=1e-6
    )
