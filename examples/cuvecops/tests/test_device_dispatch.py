"""Device arrays reach the kernels as pointers: the Python dispatch, checked without a GPU.

A stand-in array exposes ``__cuda_array_interface__`` (and refuses ``np.asarray``); a stand-in
extension records the device calls it gets.
"""

from __future__ import annotations

import ctypes
from typing import Any

import cuvecops
import numpy as np
import pytest
from cuvecops import _device, _dlpack


class FakeDeviceArray:
    """A CUDA array as CuPy or Numba describe one; any host conversion fails the test."""

    def __init__(
        self,
        ptr: int,
        shape: tuple[int, ...],
        typestr: str = "<f4",
        *,
        strides: tuple[int, ...] | None = None,
        stream: int | None = None,
        readonly: bool = False,
    ) -> None:
        self.ptr = ptr
        self.__cuda_array_interface__ = {
            "shape": shape,
            "typestr": typestr,
            "data": (ptr, readonly),
            "strides": strides,
            "version": 3,
            "stream": stream,
        }

    def __array__(self, *args: object, **kwargs: object) -> np.ndarray[Any, Any]:
        raise AssertionError("a device array was converted to a host array")


class FakeExtension:
    """Records the device entry points' arguments."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[object, ...], dict[str, object]]] = []

    def _record(self, name: str, *args: object, **kwargs: object) -> None:
        self.calls.append((name, args, kwargs))

    def saxpy_device(self, *args: object, **kwargs: object) -> None:
        self._record("saxpy_device", *args, **kwargs)

    def softmax_rows_device(self, *args: object, **kwargs: object) -> None:
        self._record("softmax_rows_device", *args, **kwargs)

    def reduce_sum_device(self, *args: object, **kwargs: object) -> None:
        self._record("reduce_sum_device", *args, **kwargs)


@pytest.fixture
def ext(monkeypatch: pytest.MonkeyPatch) -> FakeExtension:
    fake = FakeExtension()
    monkeypatch.setattr(cuvecops, "_cuda_module", lambda: fake)
    return fake


def vector(ptr: int, n: int = 1000, typestr: str = "<f4", **kwargs: Any) -> FakeDeviceArray:
    return FakeDeviceArray(ptr, (n,), typestr, **kwargs)


def test_saxpy_passes_pointers_and_size(ext: FakeExtension) -> None:
    x, y, out = vector(0x1000), vector(0x2000), vector(0x3000)
    assert cuvecops.saxpy(2.5, x, y, out=out) is out
    assert ext.calls == [
        ("saxpy_device", (2.5, 0x1000, 0x2000, 0x3000, 1000), {"stream": 0, "wait": ()})
    ]


def test_softmax_passes_rows_and_cols(ext: FakeExtension) -> None:
    x = FakeDeviceArray(0x1000, (2, 3, 5))
    out = FakeDeviceArray(0x2000, (2, 3, 5))
    assert cuvecops.softmax(x, out=out) is out
    assert ext.calls == [("softmax_rows_device", (0x1000, 0x2000, 6, 5), {"stream": 0, "wait": ()})]


@pytest.mark.parametrize(
    ("typestr", "out_typestr"),
    [("<f4", "<f8"), ("<f8", "<f8"), ("<i4", "<i8"), ("<i8", "<i8")],
)
def test_reduce_sum_passes_dtype_and_a_one_element_out(
    ext: FakeExtension, typestr: str, out_typestr: str
) -> None:
    x = vector(0x1000, 77, typestr)
    out = FakeDeviceArray(0x2000, (), out_typestr)
    assert cuvecops.reduce_sum(x, out=out) is out
    dtype = np.dtype(typestr).name
    assert ext.calls == [
        ("reduce_sum_device", (dtype, 0x1000, 77, 0x2000), {"stream": 0, "wait": ()})
    ]


def test_reduce_sum_refuses_an_out_of_the_wrong_type(ext: FakeExtension) -> None:
    with pytest.raises(TypeError, match="one-element float64"):
        cuvecops.reduce_sum(vector(0x1000), out=FakeDeviceArray(0x2000, (1,), "<i8"))
    assert ext.calls == []


def test_non_torch_inputs_need_out(ext: FakeExtension) -> None:
    with pytest.raises(TypeError, match="pass out="):
        cuvecops.saxpy(1.0, vector(0x1000), vector(0x2000))
    with pytest.raises(TypeError, match="pass out="):
        cuvecops.reduce_sum(vector(0x1000))
    assert ext.calls == []


@pytest.mark.parametrize(
    ("x", "error", "match"),
    [
        (vector(0x1000, typestr="<f8"), TypeError, "y: expected float32 values, got float64"),
        (vector(0x1000, typestr=">f4"), TypeError, "y: expected float32 values, got >f4"),
        (vector(0x1000, strides=(8,)), TypeError, "C-contiguous"),
        (vector(0x1000, n=999), ValueError, r"has shape \(999,\), expected \(1000,\)"),
    ],
    ids=["float64", "big-endian", "strided", "shape"],
)
def test_bad_inputs_are_refused_before_any_launch(
    ext: FakeExtension, x: FakeDeviceArray, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        cuvecops.saxpy(1.0, vector(0x2000), x, out=vector(0x3000))
    assert ext.calls == []


def test_read_only_out_is_refused(ext: FakeExtension) -> None:
    with pytest.raises(TypeError, match="read-only"):
        cuvecops.saxpy(1.0, vector(0x1000), vector(0x2000), out=vector(0x3000, readonly=True))


def test_host_and_device_arrays_do_not_mix(ext: FakeExtension) -> None:
    with pytest.raises(TypeError, match=r"y: expected a CUDA device array.*numpy\.ndarray"):
        cuvecops.saxpy(1.0, vector(0x1000, n=3), np.ones(3, np.float32), out=vector(0x3000, n=3))
    with pytest.raises(TypeError, match="out= is for device arrays"):
        cuvecops.saxpy(1.0, np.ones(3), np.ones(3), out=np.ones(3, np.float32))
    assert ext.calls == []


def test_runs_on_the_stream_of_x_and_waits_for_the_others(ext: FakeExtension) -> None:
    x = vector(0x1000, stream=0xAB00)
    y = vector(0x2000, stream=1)  # the legacy default stream, in the interface's spelling
    out = vector(0x3000, stream=0xAB00)
    cuvecops.saxpy(1.0, x, y, out=out)
    assert ext.calls[0][2] == {"stream": 0xAB00, "wait": (0,)}


def test_stream_zero_is_refused(ext: FakeExtension) -> None:
    with pytest.raises(ValueError, match="stream 0 is not allowed"):
        cuvecops.saxpy(1.0, vector(0x1000, stream=0), vector(0x2000), out=vector(0x3000))


def test_no_cuda_backend_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cuvecops, "_cuda_module", lambda: None)
    with pytest.raises(RuntimeError, match="got CUDA device arrays but the CUDA backend"):
        cuvecops.saxpy(1.0, vector(0x1000), vector(0x2000), out=vector(0x3000))


def test_cpu_torch_tensors_take_the_host_path() -> None:
    torch = pytest.importorskip("torch")
    x = torch.arange(4, dtype=torch.float32)
    assert not _device.is_device_array(x)
    np.testing.assert_array_equal(cuvecops.saxpy(2.0, x, x), 3 * np.arange(4, dtype=np.float32))


@pytest.mark.parametrize(
    ("shape", "strides", "expected"),
    [
        ((3, 4), None, True),
        ((3, 4), (16, 4), True),
        ((3, 4), (4, 12), False),
        ((3, 1), (4, 999), True),  # a dimension of 1 may have any stride
        ((0, 4), (4, 4), True),
        ((4,), (8,), False),
    ],
)
def test_c_contiguity(
    shape: tuple[int, ...], strides: tuple[int, ...] | None, expected: bool
) -> None:
    assert _device.c_contiguous(shape, strides, 4) is expected


# --- DLPack ---------------------------------------------------------------------------------------


class FakeDLPackArray:
    """A CUDA DLPack producer (no array interface) whose capsule points at a made-up address."""

    def __init__(self, ptr: int, shape: tuple[int, ...]) -> None:
        self.shape = (ctypes.c_int64 * len(shape))(*shape)
        self.managed = _dlpack.DLManagedTensor()
        tensor = self.managed.dl_tensor
        tensor.data, tensor.ndim, tensor.byte_offset = ptr, len(shape), 16
        tensor.device = _dlpack.DLDevice(_dlpack.KDL_CUDA, 0)
        tensor.dtype = _dlpack.DLDataType(2, 32, 1)  # float32
        tensor.shape = ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64))
        self.streams: list[object] = []

    def __dlpack_device__(self) -> tuple[int, int]:
        return (_dlpack.KDL_CUDA, 0)

    def __dlpack__(self, *, stream: object = None) -> object:
        self.streams.append(stream)
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = (
            ctypes.py_object,
            (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p),
        )
        return new(ctypes.addressof(self.managed), b"dltensor", None)

    def __array__(self, *args: object, **kwargs: object) -> np.ndarray[Any, Any]:
        raise AssertionError("a device array was converted to a host array")


def test_dlpack_producers_give_their_pointer(ext: FakeExtension) -> None:
    x, y, out = FakeDLPackArray(0x1000, (8,)), FakeDLPackArray(0x2000, (8,)), vector(0x3000, 8)
    cuvecops.saxpy(3.0, x, y, out=out)
    assert ext.calls == [
        ("saxpy_device", (3.0, 0x1010, 0x2010, 0x3000, 8), {"stream": 0, "wait": ()})
    ]
    assert x.streams == [1] and y.streams == [1]  # ordered before the legacy default stream


def test_a_host_dlpack_capsule_is_read_but_not_cuda() -> None:
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    info = _dlpack.read_capsule(arr.__dlpack__())
    assert (info.ptr, info.shape, info.dtype, info.itemsize) == (
        arr.ctypes.data,
        (2, 3),
        "float32",
        4,
    )
    assert info.device_type not in _dlpack.CUDA_DEVICE_TYPES
    assert not _device.is_device_array(arr)
