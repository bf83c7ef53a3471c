"""Reading a legacy DLPack capsule (``"dltensor"``) with ctypes: where a CUDA array lives and how
it is laid out, without importing the library that made it.

The capsule is not consumed: its producer's destructor frees it when the last reference goes,
so the caller keeps the capsule alive for as long as it uses the pointer.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

__all__ = ["CUDA_DEVICE_TYPES", "DLTensorInfo", "device_type_of", "read_capsule"]

KDL_CUDA = 2
KDL_CUDA_HOST = 3
KDL_CUDA_MANAGED = 13
CUDA_DEVICE_TYPES = (KDL_CUDA, KDL_CUDA_MANAGED)
CAPSULE_NAME = b"dltensor"

# DLDataTypeCode -> the NumPy kind letter of the same numbers.
_KINDS = {0: "i", 1: "u", 2: "f"}


class DLDevice(ctypes.Structure):
    _fields_ = (("device_type", ctypes.c_int), ("device_id", ctypes.c_int32))


class DLDataType(ctypes.Structure):
    _fields_ = (("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16))


class DLTensor(ctypes.Structure):
    _fields_ = (
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    )


class DLManagedTensor(ctypes.Structure):
    _fields_ = (
        ("dl_tensor", DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.CFUNCTYPE(None, ctypes.c_void_p)),
    )


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = (ctypes.py_object, ctypes.c_char_p)


@dataclass(frozen=True, slots=True, kw_only=True)
class DLTensorInfo:
    """What a DLPack capsule says about its array; strides in elements, None when compact."""

    ptr: int
    device_type: int
    device_id: int
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None
    dtype: str  # a NumPy dtype name ("float32"), or e.g. "code4bits16lanes1" for others
    itemsize: int  # bytes per element


def device_type_of(obj: object) -> int | None:
    """The DLPack device type ``obj.__dlpack_device__()`` reports, or None without DLPack."""
    if not hasattr(obj, "__dlpack__"):
        return None
    probe: Any = getattr(obj, "__dlpack_device__", None)
    if probe is None:
        return None
    device_type, _ = probe()
    return int(device_type)


def _dtype_name(dtype: DLDataType) -> str:
    kind = _KINDS.get(dtype.code)
    if kind is None or dtype.lanes != 1:
        return f"code{dtype.code}bits{dtype.bits}lanes{dtype.lanes}"
    return {"i": "int", "u": "uint", "f": "float"}[kind] + str(dtype.bits)


def read_capsule(capsule: object) -> DLTensorInfo:
    """The array a ``"dltensor"`` capsule describes (ValueError for any other capsule)."""
    try:
        address = _capsule_pointer(capsule, CAPSULE_NAME)
    except ValueError as err:
        raise ValueError(f"not a legacy DLPack capsule named 'dltensor': {capsule!r}") from err
    tensor = DLManagedTensor.from_address(address).dl_tensor
    ndim = int(tensor.ndim)
    shape = tuple(int(tensor.shape[i]) for i in range(ndim))
    strides = tuple(int(tensor.strides[i]) for i in range(ndim)) if tensor.strides else None
    return DLTensorInfo(
        ptr=int(tensor.data or 0) + int(tensor.byte_offset),
        device_type=int(tensor.device.device_type),
        device_id=int(tensor.device.device_id),
        shape=shape,
        strides=strides,
        dtype=_dtype_name(tensor.dtype),
        itemsize=max(1, tensor.dtype.bits * tensor.dtype.lanes // 8),
    )
