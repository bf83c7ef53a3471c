"""The ops on arrays already in GPU memory: their device pointers go straight to the kernels.

Accepted: torch CUDA tensors, any object with ``__cuda_array_interface__`` (versions 0-3: CuPy,
Numba device arrays, ...) and CUDA DLPack producers (``__dlpack__``/``__dlpack_device__``). Each is
read into a :class:`DeviceArray` (pointer, shape, dtype, the stream its producer works on) and
never touched by NumPy, so no host copy can happen.

Streams: the kernels run on the stream of ``x``: for torch tensors torch's current stream of
their device, for ``__cuda_array_interface__`` v3 its ``stream`` entry, else the legacy default
stream. When another argument reports another stream, the launch waits for that stream's pending
work first (an event, not a host synchronisation).

Outputs: ``out=`` when given (a device array of the right dtype and shape); else, for torch
inputs, a new tensor on the input's device; for other libraries cuvecops cannot allocate, so
``out=`` is required (TypeError).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

import numpy as np

from cuvecops import _dlpack
from cuvecops._loader import CudaOps

__all__ = [
    "CudaArrayInterface",
    "DLPackArray",
    "DeviceArray",
    "DeviceArrayLike",
    "Launch",
    "describe",
    "is_device_array",
    "plan_launch",
    "reduce_sum",
    "saxpy",
    "softmax",
]

LEGACY_STREAM = 0  # cudaStream_t 0; the array interface spells it 1
REDUCE_DTYPES = ("float32", "float64", "int32", "int64")


class CudaArrayInterface(Protocol):
    """An array exposing the CUDA Array Interface (torch CUDA tensors, CuPy, Numba, ...)."""

    @property
    def __cuda_array_interface__(self) -> Mapping[str, Any]: ...


class DLPackArray(Protocol):
    """A DLPack producer; cuvecops takes the ones whose device is CUDA."""

    def __dlpack__(self, *, stream: Any = ...) -> object: ...
    def __dlpack_device__(self) -> tuple[int, int]: ...


DeviceArrayLike: TypeAlias = CudaArrayInterface | DLPackArray


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceArray:
    """A C-contiguous array in CUDA memory, as one argument of one op sees it."""

    name: str  # the argument: "x", "y", "out"
    ptr: int
    shape: tuple[int, ...]
    dtype: str  # a NumPy dtype name ("float32"), or the library's spelling of another type
    readonly: bool = False
    stream: int | None = None  # the producer's stream (a cudaStream_t); None: nothing to wait on
    keep: object = None  # keeps a DLPack capsule alive while the call runs

    @property
    def size(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True, slots=True, kw_only=True)
class Launch:
    """Where a kernel runs: the stream, and the producers' streams it waits for first."""

    stream: int
    wait: tuple[int, ...] = ()


def _torch_of(obj: object) -> Any:
    """The torch module when ``obj`` is a torch tensor (torch is never imported here)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor):
        return torch
    return None


def is_device_array(obj: object) -> bool:
    """Whether ``obj`` lives in CUDA memory (a CUDA tensor, the array interface, CUDA DLPack)."""
    if obj is None or isinstance(obj, np.ndarray):
        return False
    torch = _torch_of(obj)
    if torch is not None:
        return bool(obj.is_cuda)  # type: ignore[attr-defined]
    if hasattr(obj, "__cuda_array_interface__"):
        return True
    return _dlpack.device_type_of(obj) in _dlpack.CUDA_DEVICE_TYPES


def c_contiguous(shape: Sequence[int], strides: Sequence[int] | None, itemsize: int) -> bool:
    """Whether byte ``strides`` (None: C order) lay ``shape`` out in C order without gaps."""
    if strides is None or 0 in shape:
        return True
    expected = itemsize
    for dim, stride in zip(reversed(shape), reversed(strides), strict=True):
        if dim != 1 and stride != expected:
            return False
        expected *= dim
    return True


def _dtype_name(typestr: str) -> str:
    try:
        dtype = np.dtype(typestr)
    except TypeError:
        return typestr
    return dtype.name if dtype.isnative else typestr


def _not_contiguous(name: str, strides: object) -> TypeError:
    return TypeError(
        f"{name}: expected a C-contiguous device array, got strides {strides!r}; "
        "make a contiguous copy first (e.g. .contiguous() in torch)"
    )


def _from_torch(torch: Any, tensor: Any, name: str) -> DeviceArray:
    if not tensor.is_cuda:
        raise TypeError(f"{name}: a {tensor.device} tensor among CUDA arrays; move it with .cuda()")
    if not tensor.is_contiguous():
        raise _not_contiguous(name, tuple(tensor.stride()))
    return DeviceArray(
        name=name,
        ptr=int(tensor.data_ptr()),
        shape=tuple(int(d) for d in tensor.shape),
        dtype=str(tensor.dtype).removeprefix("torch."),
        stream=_torch_stream(torch, tensor),
    )


def _torch_stream(torch: Any, tensor: Any) -> int:
    """torch's current stream on the tensor's device, as a cudaStream_t.

    ``torch._C._cuda_getCurrentRawStream`` (what Triton's launcher reads too) answers in well
    under a microsecond; ``torch.cuda.current_stream(device)`` builds a Stream object under a
    device guard, several microseconds per argument of every call.
    """
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return int(raw(tensor.get_device()))
    return int(torch.cuda.current_stream(tensor.device).cuda_stream)


def _interface_stream(interface: dict[str, Any], name: str) -> int | None:
    stream = interface.get("stream") if int(interface.get("version", 0)) >= 3 else None
    if stream is None:
        return None
    if int(stream) == 0:
        raise ValueError(f"{name}: __cuda_array_interface__ stream 0 is not allowed (v3 spec)")
    return LEGACY_STREAM if int(stream) == 1 else int(stream)


def _from_interface(obj: Any, name: str) -> DeviceArray:
    interface: dict[str, Any] = obj.__cuda_array_interface__
    if interface.get("mask") is not None:
        raise TypeError(f"{name}: masked device arrays are not supported")
    shape = tuple(int(d) for d in interface["shape"])
    typestr = str(interface["typestr"])
    strides = interface.get("strides")
    if not c_contiguous(shape, strides, np.dtype(typestr).itemsize):
        raise _not_contiguous(name, strides)
    ptr, readonly = interface["data"]
    return DeviceArray(
        name=name,
        ptr=int(ptr or 0),
        shape=shape,
        dtype=_dtype_name(typestr),
        readonly=bool(readonly),
        stream=_interface_stream(interface, name),
    )


def _from_dlpack(obj: Any, name: str, stream: int) -> DeviceArray:
    # DLPack spells the legacy default stream 1, as the array interface does.
    capsule = obj.__dlpack__(stream=1 if stream == LEGACY_STREAM else stream)
    info = _dlpack.read_capsule(capsule)
    if info.device_type not in _dlpack.CUDA_DEVICE_TYPES:
        raise TypeError(f"{name}: DLPack device type {info.device_type} is not CUDA memory")
    if info.strides is not None:
        byte_strides = tuple(s * info.itemsize for s in info.strides)
        if not c_contiguous(info.shape, byte_strides, info.itemsize):
            raise _not_contiguous(name, info.strides)
    # The producer has ordered its work before `stream` (the DLPack contract): no wait needed.
    return DeviceArray(name=name, ptr=info.ptr, shape=info.shape, dtype=info.dtype, keep=capsule)


def describe(obj: object, name: str, stream: int = LEGACY_STREAM) -> DeviceArray:
    """``obj`` as a device array; TypeError when it is none, or not C-contiguous.

    ``stream`` is the stream the call will run on, handed to DLPack producers.
    """
    torch = _torch_of(obj)
    if torch is not None:
        return _from_torch(torch, obj, name)
    if hasattr(obj, "__cuda_array_interface__"):
        return _from_interface(obj, name)
    if _dlpack.device_type_of(obj) in _dlpack.CUDA_DEVICE_TYPES:
        return _from_dlpack(obj, name, stream)
    kind = f"{type(obj).__module__}.{type(obj).__qualname__}"
    raise TypeError(
        f"{name}: expected a CUDA device array like the other arguments, got {kind}; "
        "pass all arrays on the GPU (torch CUDA tensors, CuPy, __cuda_array_interface__) or all "
        "on the host"
    )


def plan_launch(arrays: Sequence[DeviceArray]) -> Launch:
    """Run on the stream of the first array; wait for the other producers' streams."""
    first = arrays[0].stream
    stream = LEGACY_STREAM if first is None else first
    others = (a.stream for a in arrays[1:] if a.stream is not None and a.stream != stream)
    return Launch(stream=stream, wait=tuple(dict.fromkeys(others)))


def _require_dtype(op: str, array: DeviceArray, allowed: Sequence[str]) -> None:
    if array.dtype not in allowed:
        want = " or ".join(allowed)
        raise TypeError(f"cuvecops.{op}: {array.name}: expected {want} values, got {array.dtype}")


def _require_shape(op: str, array: DeviceArray, shape: tuple[int, ...]) -> None:
    if array.shape != shape:
        raise ValueError(f"cuvecops.{op}: {array.name} has shape {array.shape}, expected {shape}")


def _output(op: str, like: object, out: object, shape: tuple[int, ...], dtype: str) -> object:
    """``out`` when given, else a new array of ``like``'s library (torch only)."""
    if out is not None:
        return out
    torch = _torch_of(like)
    if torch is None:
        kind = f"{type(like).__module__}.{type(like).__qualname__}"
        raise TypeError(
            f"cuvecops.{op}: cannot allocate the result for a {kind} input; pass out=, a "
            f"C-contiguous {dtype} device array of shape {shape}"
        )
    return torch.empty(shape, dtype=getattr(torch, dtype), device=like.device)  # type: ignore[attr-defined]


def _writable_out(
    op: str, out: object, stream: int, dtype: str, shape: tuple[int, ...]
) -> DeviceArray:
    array = describe(out, "out", stream)
    if array.readonly:
        raise TypeError(f"cuvecops.{op}: out is a read-only device array")
    _require_dtype(op, array, (dtype,))
    _require_shape(op, array, shape)
    return array


def _plain_torch(torch: Any, dtypes: Sequence[Any], *tensors: Any) -> bool:
    """Whether every argument is a plain C-contiguous torch CUDA tensor of one of ``dtypes``, all
    on one device: the common case, taken with a few attribute reads. The general path builds a
    DeviceArray per argument and costs several microseconds more per call, which a cold timing
    of a small kernel measures."""
    device = tensors[0].get_device() if type(tensors[0]) is torch.Tensor else -1
    return device >= 0 and all(
        type(t) is torch.Tensor
        and t.get_device() == device
        and t.dtype in dtypes
        and t.is_contiguous()
        for t in tensors
    )


def _torch_saxpy(module: CudaOps, torch: Any, a: float, x: Any, y: Any, out: Any) -> Any:
    """saxpy on plain torch tensors (see :func:`_plain_torch`); None: take the general path."""
    f32 = (torch.float32,)
    result = torch.empty_like(x) if out is None and _plain_torch(torch, f32, x) else out
    if not (_plain_torch(torch, f32, x, y, result) and x.shape == y.shape == result.shape):
        return None
    stream = _torch_stream(torch, x)
    module.saxpy_device(
        float(a), x.data_ptr(), y.data_ptr(), result.data_ptr(), x.numel(), stream=stream, wait=()
    )
    return result


def _torch_softmax(module: CudaOps, torch: Any, x: Any, out: Any) -> Any:
    """softmax on plain torch tensors (see :func:`_plain_torch`); None: take the general path."""
    f32 = (torch.float32,)
    if x.dim() == 0:
        return None
    result = torch.empty_like(x) if out is None and _plain_torch(torch, f32, x) else out
    if not (_plain_torch(torch, f32, x, result) and x.shape == result.shape):
        return None
    cols = int(x.shape[-1])
    rows = x.numel() // cols if cols else 0
    stream = _torch_stream(torch, x)
    module.softmax_rows_device(x.data_ptr(), result.data_ptr(), rows, cols, stream=stream, wait=())
    return result


def _torch_reduce_sum(module: CudaOps, torch: Any, x: Any, out: Any) -> Any:
    """reduce_sum on plain torch tensors (see :func:`_plain_torch`); None: the general path."""
    if not _plain_torch(torch, (torch.float32, torch.float64, torch.int32, torch.int64), x):
        return None
    total = torch.float64 if x.is_floating_point() else torch.int64
    result = torch.empty((), dtype=total, device=x.device) if out is None else out
    plain_out = _plain_torch(torch, (total,), result) and result.get_device() == x.get_device()
    if not (plain_out and result.numel() == 1):
        return None
    dtype = str(x.dtype).removeprefix("torch.")
    stream = _torch_stream(torch, x)
    module.reduce_sum_device(
        dtype, x.data_ptr(), x.numel(), result.data_ptr(), stream=stream, wait=()
    )
    return result


def saxpy(module: CudaOps, a: float, x: object, y: object, out: object = None) -> object:
    """``out = a * x + y`` on float32 device arrays of one shape; returns ``out``."""
    torch = _torch_of(x)
    if torch is not None:
        done = _torch_saxpy(module, torch, a, x, y, out)
        if done is not None:
            return done
    xd = describe(x, "x")
    stream = plan_launch([xd]).stream
    yd = describe(y, "y", stream)
    for array in (xd, yd):
        _require_dtype("saxpy", array, ("float32",))
    _require_shape("saxpy", yd, xd.shape)
    result = _output("saxpy", x, out, xd.shape, "float32")
    od = _writable_out("saxpy", result, stream, "float32", xd.shape)
    launch = plan_launch([xd, yd, od])
    module.saxpy_device(
        float(a), xd.ptr, yd.ptr, od.ptr, xd.size, stream=launch.stream, wait=launch.wait
    )
    return result


def softmax(module: CudaOps, x: object, out: object = None) -> object:
    """Softmax over the last axis of a float32 device array; returns ``out``."""
    torch = _torch_of(x)
    if torch is not None:
        done = _torch_softmax(module, torch, x, out)
        if done is not None:
            return done
    xd = describe(x, "x")
    _require_dtype("softmax", xd, ("float32",))
    if not xd.shape:
        raise ValueError("softmax: expected at least one dimension, got a scalar")
    stream = plan_launch([xd]).stream
    result = _output("softmax", x, out, xd.shape, "float32")
    od = _writable_out("softmax", result, stream, "float32", xd.shape)
    cols = xd.shape[-1]
    rows = xd.size // cols if cols else 0
    launch = plan_launch([xd, od])
    module.softmax_rows_device(xd.ptr, od.ptr, rows, cols, stream=launch.stream, wait=launch.wait)
    return result


def reduce_sum(module: CudaOps, x: object, out: object = None) -> object:
    """Sum of a device array into a one-element device array (float64 for float inputs, int64
    for integer inputs); returns ``out``, a 0-d tensor for torch inputs."""
    torch = _torch_of(x)
    if torch is not None:
        done = _torch_reduce_sum(module, torch, x, out)
        if done is not None:
            return done
    xd = describe(x, "x")
    _require_dtype("reduce_sum", xd, REDUCE_DTYPES)
    total = "float64" if xd.dtype.startswith("float") else "int64"
    stream = plan_launch([xd]).stream
    result = _output("reduce_sum", x, out, (), total)
    od = describe(result, "out", stream)
    if od.readonly or od.size != 1 or od.dtype != total:
        raise TypeError(
            f"cuvecops.reduce_sum: out must be a writable one-element {total} device array, "
            f"got {od.dtype} of shape {od.shape}"
        )
    launch = plan_launch([xd, od])
    module.reduce_sum_device(
        xd.dtype, xd.ptr, xd.size, od.ptr, stream=launch.stream, wait=launch.wait
    )
    return result
