"""The public ops on torch CUDA tensors: the kernels work on the tensors' own memory.

Marked ``gpu(min_cc="8.0")`` like test_cuda.py. No timing: "no host copy" is shown by the
pointers that reach the extension (the tensors' own ``data_ptr()``), by results that are CUDA
tensors, and by NumPy refusing to make any host array during the call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import cuvecops
import numpy as np
import pytest
from references import saxpy_ref, softmax_ref

pytestmark = pytest.mark.gpu(min_cc="8.0")

F32 = (1.3e-6, 1e-5)  # rtol, atol


@pytest.fixture(scope="module")
def torch() -> Any:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip(f"torch {torch.__version__} sees no CUDA device")
    assert cuvecops.backend().startswith("cuda: "), cuvecops.backend()
    return torch


class Spy:
    """The real extension, with a record of every ``*_device`` call."""

    def __init__(self, real: object) -> None:
        self.real = real
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.real, name)
        if not name.endswith("_device"):
            return attr

        def record(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, args, kwargs))
            return attr(*args, **kwargs)

        return record


@pytest.fixture
def spy(torch: Any, monkeypatch: pytest.MonkeyPatch) -> Spy:
    recorder = Spy(cuvecops._cuda_module())
    monkeypatch.setattr(cuvecops, "_cuda_module", lambda: recorder)
    return recorder


def without_host_arrays(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` while NumPy refuses to build arrays from anything."""

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("a host array was made from a device array")

    with pytest.MonkeyPatch.context() as patch:
        for name in ("asarray", "ascontiguousarray", "array", "frombuffer"):
            patch.setattr(np, name, refuse)
        return fn(*args, **kwargs)


def cuda_vector(torch: Any, rng: np.random.Generator, n: int, dtype: str = "float32") -> Any:
    return torch.from_numpy(rng.uniform(-10, 10, n).astype(dtype)).cuda()


@pytest.mark.parametrize("n", [0, 1, 3, 4, 1000, (1 << 20) + 3])
def test_saxpy_gives_a_cuda_tensor(torch: Any, rng: np.random.Generator, n: int) -> None:
    x, y = cuda_vector(torch, rng, n), cuda_vector(torch, rng, n)
    out = without_host_arrays(cuvecops.saxpy, 2.5, x, y)
    assert isinstance(out, torch.Tensor) and out.device == x.device
    assert out.dtype == torch.float32 and out.shape == x.shape
    expected = saxpy_ref(2.5, x.cpu().numpy(), y.cpu().numpy())
    np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=F32[0], atol=F32[1])


def test_the_tensors_own_pointers_reach_the_kernel(
    torch: Any, spy: Spy, rng: np.random.Generator
) -> None:
    x, y = cuda_vector(torch, rng, 4099), cuda_vector(torch, rng, 4099)
    out = torch.empty_like(x)
    assert without_host_arrays(cuvecops.saxpy, -1.0, x, y, out=out) is out
    stream = torch.cuda.current_stream().cuda_stream
    assert spy.calls == [
        (
            "saxpy_device",
            (-1.0, x.data_ptr(), y.data_ptr(), out.data_ptr(), 4099),
            {"stream": stream, "wait": ()},
        )
    ]
    expected = saxpy_ref(-1.0, x.cpu().numpy(), y.cpu().numpy())
    np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=F32[0], atol=F32[1])


def test_runs_on_torchs_current_stream(torch: Any, spy: Spy, rng: np.random.Generator) -> None:
    side = torch.cuda.Stream()
    x = cuda_vector(torch, rng, 1 << 16)
    side.wait_stream(torch.cuda.current_stream())  # x was made on the default stream
    with torch.cuda.stream(side):
        out = cuvecops.saxpy(3.0, x, x)
    assert spy.calls[0][2]["stream"] == side.cuda_stream
    side.synchronize()
    expected = saxpy_ref(3.0, x.cpu().numpy(), x.cpu().numpy())
    np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=F32[0], atol=F32[1])


def test_unaligned_views_are_right(torch: Any, rng: np.random.Generator) -> None:
    base_x, base_y = cuda_vector(torch, rng, 1030), cuda_vector(torch, rng, 1030)
    x, y = base_x[1:1026], base_y[3:1028]  # contiguous, not 16-byte aligned: the scalar kernel
    out = cuvecops.saxpy(0.5, x, y)
    expected = saxpy_ref(0.5, x.cpu().numpy(), y.cpu().numpy())
    np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=F32[0], atol=F32[1])


@pytest.mark.parametrize("shape", [(1, 1), (7, 300), (2, 3, 129), (128, 4096)])
def test_softmax_gives_a_cuda_tensor(
    torch: Any, rng: np.random.Generator, shape: tuple[int, ...]
) -> None:
    x = torch.from_numpy(rng.uniform(-80, 80, shape).astype(np.float32)).cuda()
    out = without_host_arrays(cuvecops.softmax, x)
    assert isinstance(out, torch.Tensor) and out.is_cuda and out.shape == x.shape
    np.testing.assert_allclose(
        out.cpu().numpy(), softmax_ref(x.cpu().numpy()), rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize("n", [0, 1, 257, 1_000_003])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_reduce_sum_gives_a_cuda_scalar(
    torch: Any, rng: np.random.Generator, dtype: str, n: int
) -> None:
    host = rng.uniform(-100, 100, n).astype(dtype)
    total = without_host_arrays(cuvecops.reduce_sum, torch.from_numpy(host).cuda())
    assert isinstance(total, torch.Tensor) and total.is_cuda and total.shape == ()
    if dtype.startswith("int"):
        assert total.dtype == torch.int64
        assert total.item() == int(host.astype(np.int64).sum())
    else:
        assert total.dtype == torch.float64
        assert total.item() == pytest.approx(
            float(host.astype(np.float64).sum()), rel=1e-9, abs=1e-9
        )


def test_reduce_sum_fills_out_and_does_not_overflow_int32(torch: Any) -> None:
    x = torch.full((4,), 2**31 - 1, dtype=torch.int32, device="cuda")
    out = torch.empty(1, dtype=torch.int64, device="cuda")
    assert cuvecops.reduce_sum(x, out=out) is out
    assert out.item() == 4 * (2**31 - 1)


def test_non_contiguous_input_is_refused(torch: Any, spy: Spy) -> None:
    x = torch.ones(2000, device="cuda")
    with pytest.raises(TypeError, match="C-contiguous"):
        cuvecops.saxpy(1.0, x[::2], x[::2])
    with pytest.raises(TypeError, match="C-contiguous"):
        cuvecops.softmax(torch.ones(8, 16, device="cuda").t())
    with pytest.raises(TypeError, match="C-contiguous"):
        cuvecops.reduce_sum(x[::3])
    assert spy.calls == []


def test_wrong_dtype_is_refused(torch: Any, spy: Spy) -> None:
    x64 = torch.ones(16, dtype=torch.float64, device="cuda")
    with pytest.raises(TypeError, match="x: expected float32 values, got float64"):
        cuvecops.saxpy(1.0, x64, x64)
    with pytest.raises(TypeError, match="expected float32 values, got float16"):
        cuvecops.softmax(torch.ones(2, 3, dtype=torch.float16, device="cuda"))
    with pytest.raises(TypeError, match="got int16"):
        cuvecops.reduce_sum(torch.ones(5, dtype=torch.int16, device="cuda"))
    with pytest.raises(ValueError, match="shape"):
        cuvecops.saxpy(1.0, torch.ones(3, device="cuda"), torch.ones(4, device="cuda"))
    assert spy.calls == []


def test_host_memory_is_refused_by_the_extension(torch: Any) -> None:
    ext = cuvecops._cuda_module()
    assert ext is not None
    host = np.ones(8, np.float32)
    device = torch.ones(8, device="cuda")
    with pytest.raises(ValueError, match=r"x .* is host memory unknown to CUDA, not CUDA device"):
        ext.saxpy_device(1.0, host.ctypes.data, device.data_ptr(), device.data_ptr(), 8)


class DLPackOnly:
    """A CUDA DLPack producer with no array interface (wraps a torch tensor)."""

    def __init__(self, tensor: Any) -> None:
        self.tensor = tensor

    def __dlpack__(self, *, stream: Any = None) -> object:
        return self.tensor.__dlpack__(stream=stream)

    def __dlpack_device__(self) -> tuple[int, int]:
        device_type, index = self.tensor.__dlpack_device__()
        return int(device_type), int(index)


def test_dlpack_producers_are_used_in_place(torch: Any, spy: Spy, rng: np.random.Generator) -> None:
    x, y = cuda_vector(torch, rng, 1001), cuda_vector(torch, rng, 1001)
    out = torch.empty_like(x)
    cuvecops.saxpy(2.0, DLPackOnly(x), DLPackOnly(y), out=out)
    assert spy.calls[0][1][1:4] == (x.data_ptr(), y.data_ptr(), out.data_ptr())
    expected = saxpy_ref(2.0, x.cpu().numpy(), y.cpu().numpy())
    np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=F32[0], atol=F32[1])
