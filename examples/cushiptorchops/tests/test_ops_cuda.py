"""The CUDA kernels (GPU only): same answers as the float64 references, on torch's current
stream and on the tensors' own device."""

from __future__ import annotations

import cushiptorchops
import numpy as np
import pytest
import torch
from references import bias_gelu_ref, rms_norm_ref

pytestmark = pytest.mark.gpu

TOLERANCES = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-5, 1e-5),
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1.6e-2, 1e-2),
}
SHAPES = ((1, 1), (3, 7), (17, 257), (4, 4099), (2, 3, 33), (1000, 64))


def cuda_tensor(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: torch.dtype
) -> torch.Tensor:
    return torch.from_numpy(rng.standard_normal(shape) * 3).to(dtype=dtype, device="cuda")


def assert_matches(actual: torch.Tensor, expected: np.ndarray, dtype: torch.dtype) -> None:
    assert actual.is_cuda and actual.dtype == dtype
    rtol, atol = TOLERANCES[dtype]
    np.testing.assert_allclose(actual.double().cpu().numpy(), expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", list(TOLERANCES), ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_bias_gelu_cuda(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: torch.dtype
) -> None:
    x, bias = cuda_tensor(rng, shape, dtype), cuda_tensor(rng, shape[-1:], dtype)
    expected = bias_gelu_ref(x.double().cpu().numpy(), bias.double().cpu().numpy())
    assert_matches(cushiptorchops.bias_gelu(x, bias), expected, dtype)


@pytest.mark.parametrize("dtype", list(TOLERANCES), ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_rms_norm_cuda(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: torch.dtype
) -> None:
    x, weight = cuda_tensor(rng, shape, dtype), cuda_tensor(rng, shape[-1:], dtype)
    expected = rms_norm_ref(x.double().cpu().numpy(), weight.double().cpu().numpy(), 1e-5)
    assert_matches(cushiptorchops.rms_norm(x, weight, 1e-5), expected, dtype)


def test_runs_on_the_current_stream(rng: np.random.Generator) -> None:
    x, weight = (
        cuda_tensor(rng, (4096, 1024), torch.float32),
        cuda_tensor(rng, (1024,), torch.float32),
    )
    expected = rms_norm_ref(x.double().cpu().numpy(), weight.double().cpu().numpy(), 1e-6)
    side = torch.cuda.Stream()  # type: ignore[no-untyped-call]
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        out = cushiptorchops.rms_norm(x, weight)
        out.mul_(2.0)  # queued behind the kernel on the same stream
    side.synchronize()
    assert_matches(out, 2.0 * expected, torch.float32)


def test_mixed_devices_are_refused(rng: np.random.Generator) -> None:
    x = cuda_tensor(rng, (2, 8), torch.float32)
    with pytest.raises(RuntimeError, match="different devices"):
        cushiptorchops.bias_gelu(x, torch.ones(8))


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices")
def test_tensor_on_the_second_device(rng: np.random.Generator) -> None:
    x = cuda_tensor(rng, (8, 32), torch.float32).to("cuda:1")
    weight = torch.ones(32, device="cuda:1")
    out = cushiptorchops.rms_norm(x, weight)
    assert out.device == x.device
    expected = rms_norm_ref(x.double().cpu().numpy(), np.ones(32), 1e-6)
    assert_matches(out, expected, torch.float32)
