"""The ops' CPU kernels against float64 references, and what the dispatcher knows about them."""

from __future__ import annotations

import cushiptorchops
import numpy as np
import pytest
import torch
from references import bias_gelu_ref, rms_norm_ref

SHAPES = ((1, 1), (3, 7), (17, 257), (4, 1000), (2, 3, 33))
# (rtol, atol) per dtype: torch.testing's defaults, looser for float32 RMSNorm, whose row sum
# of squares is accumulated in float32.
TOLERANCES = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-5, 1e-5),
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1.6e-2, 1e-2),
}


def tensor(rng: np.random.Generator, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    return torch.from_numpy(rng.standard_normal(shape) * 3).to(dtype)


def assert_matches(actual: torch.Tensor, expected: np.ndarray, dtype: torch.dtype) -> None:
    assert actual.dtype == dtype
    rtol, atol = TOLERANCES[dtype]
    np.testing.assert_allclose(actual.double().numpy(), expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", list(TOLERANCES), ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_bias_gelu(rng: np.random.Generator, shape: tuple[int, ...], dtype: torch.dtype) -> None:
    x, bias = tensor(rng, shape, dtype), tensor(rng, shape[-1:], dtype)
    out = cushiptorchops.bias_gelu(x, bias)
    assert out.shape == x.shape
    assert_matches(out, bias_gelu_ref(x.double().numpy(), bias.double().numpy()), dtype)


@pytest.mark.parametrize("dtype", list(TOLERANCES), ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_rms_norm(rng: np.random.Generator, shape: tuple[int, ...], dtype: torch.dtype) -> None:
    x, weight = tensor(rng, shape, dtype), tensor(rng, shape[-1:], dtype)
    out = cushiptorchops.rms_norm(x, weight, 1e-5)
    assert out.shape == x.shape
    assert_matches(out, rms_norm_ref(x.double().numpy(), weight.double().numpy(), 1e-5), dtype)


def test_rms_norm_default_eps_and_torch_agree(rng: np.random.Generator) -> None:
    x, weight = tensor(rng, (8, 64), torch.float64), tensor(rng, (64,), torch.float64)
    ours = torch.ops.cushiptorchops.rms_norm(x, weight)  # eps from the schema: 1e-6
    theirs = torch.nn.functional.rms_norm(x, (64,), weight, eps=1e-6)
    torch.testing.assert_close(ours, theirs)


def test_non_contiguous_input(rng: np.random.Generator) -> None:
    x = tensor(rng, (64, 16), torch.float32).t()  # (16, 64), strided
    bias = tensor(rng, (64,), torch.float32)
    assert not x.is_contiguous()
    expected = bias_gelu_ref(x.double().numpy(), bias.double().numpy())
    assert_matches(cushiptorchops.bias_gelu(x, bias), expected, torch.float32)


def test_empty_rows() -> None:
    x = torch.empty((0, 8))
    assert cushiptorchops.rms_norm(x, torch.ones(8)).shape == (0, 8)
    assert cushiptorchops.bias_gelu(x, torch.ones(8)).shape == (0, 8)


def test_gelu_tails() -> None:
    x = torch.tensor([[-30.0, -1.0, 0.0, 1.0, 30.0]], dtype=torch.float64)
    out = cushiptorchops.bias_gelu(x, torch.zeros(5, dtype=torch.float64))
    np.testing.assert_allclose(out.numpy(), bias_gelu_ref(x.numpy(), np.zeros(5)), rtol=1e-12)
    assert out[0, 0].item() == pytest.approx(0.0, abs=1e-100)
    assert out[0, 4].item() == 30.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: cushiptorchops.rms_norm(torch.ones(2, 4), torch.ones(3)), "must be 1-D"),
        (lambda: cushiptorchops.bias_gelu(torch.ones(2, 4), torch.ones(2, 4)), "must be 1-D"),
        (lambda: cushiptorchops.bias_gelu(torch.tensor(1.0), torch.ones(1)), "0-d"),
        (
            lambda: cushiptorchops.rms_norm(torch.ones(4), torch.ones(4, dtype=torch.float64)),
            "different dtypes",
        ),
        (
            lambda: cushiptorchops.rms_norm(torch.ones(4, dtype=torch.int32), torch.ones(4).int()),
            "not implemented for 'Int'|unsupported dtype",
        ),
    ],
    ids=["weight-shape", "bias-2d", "0-d", "mixed-dtypes", "int"],
)
def test_bad_arguments_raise(call: object, message: str) -> None:
    assert callable(call)
    with pytest.raises(RuntimeError, match=message):
        call()


@pytest.mark.parametrize("op", ["bias_gelu", "rms_norm"])
def test_registered_for_cpu_and_cuda(op: str) -> None:
    name = f"cushiptorchops::{op}"
    for key in ("CPU", "CUDA"):
        assert torch._C._dispatch_has_kernel_for_dispatch_key(name, key), (name, key)


def test_variant_is_named_by_the_library() -> None:
    path = cushiptorchops.library_path()
    expected = "stable" if path.name == "_C.abi3.so" else "exact"
    assert path.name.startswith("_C") and cushiptorchops.variant() == expected
