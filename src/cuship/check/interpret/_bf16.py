"""bfloat16 arithmetic for the Triton interpreter: compute in float32, round to nearest even.

The interpreter holds bf16 values as their uint16 bits and runs NumPy on the bits, so ``a * b``
multiplies integers. These wrappers of the interpreter builder's operations widen bf16 operands to
float32, call the original operation, and round a float result back to bf16 bits. Used by
:mod:`cuship.check.interpret.adapt` only, while a case runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

import numpy as np

__all__ = ["BUILDER_WRAPPERS", "REDUCE_WRAPPERS", "from_f32", "get_bf16", "to_f32"]

Method = Callable[..., Any]
_SIXTEEN = np.uint64(16)


def to_f32(bits: Any) -> Any:
    """bf16 bits (uint16) -> float32 values, same shape."""
    return (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)


def from_f32(values: Any) -> Any:
    """float32 values -> bf16 bits (uint16), rounded to nearest even; NaN stays NaN.

    The constants are uint64 scalars: under NumPy 1.x a 0-d uint64 array (a reduction's result)
    mixed with a Python int is promoted to float64, which has no right shift."""
    wide = np.asarray(values, dtype=np.float32)
    bits = wide.view(np.uint32).astype(np.uint64)
    odd = (bits >> _SIXTEEN) & np.uint64(1)
    rounded = ((bits + np.uint64(0x7FFF) + odd) >> _SIXTEEN).astype(np.uint16)
    return np.where(np.isnan(wide), np.uint16(0x7FC0), rounded).astype(np.uint16)


def _is_bf16(handle: Any) -> bool:
    import triton.language as tl

    return handle is not None and getattr(handle.dtype, "scalar", None) == tl.bfloat16


def _widen(handle: Any, interpreter: ModuleType) -> Any:
    import triton.language as tl

    if not _is_bf16(handle):
        return handle
    return interpreter.TensorHandle(to_f32(handle.data), tl.float32)


def _narrow(result: Any, like: Any, interpreter: ModuleType) -> Any:
    """A float32 result back to bf16 bits; a boolean result (a comparison) kept as it is."""
    import triton.language as tl

    if result.data.dtype == np.bool_:
        return interpreter.TensorHandle(result.data, like.dtype.scalar)
    return interpreter.TensorHandle(from_f32(result.data), tl.bfloat16)


def _elementwise(original: Method, interpreter: ModuleType) -> Method:
    """Wrap ``op(self, *handles, ...)``: bf16 handles computed in float32 and rounded back."""

    def run(self: Any, *args: Any) -> Any:
        handles = [a for a in args if hasattr(a, "data") and hasattr(a, "dtype")]
        bf16 = next((h for h in handles if _is_bf16(h)), None)
        if bf16 is None:
            return original(self, *args)
        wide = [_widen(a, interpreter) if hasattr(a, "data") else a for a in args]
        return _narrow(original(self, *wide), bf16, interpreter)

    return run


def _ternary(original: Method, interpreter: ModuleType) -> Method:
    """``select`` moves bits and is right as is; ``clamp`` computes and is widened."""
    elementwise = _elementwise(original, interpreter)

    def run(self: Any, lhs: Any, rhs: Any, other: Any, op: Any) -> Any:
        if op is np.where:
            return original(self, lhs, rhs, other, op)
        return elementwise(self, lhs, rhs, other, op)

    return run


def _cast(original: Method, interpreter: ModuleType) -> Method:
    """Casts to or from bf16 go through float32 (ints, fp16, fp64 used the bits as numbers)."""
    import triton.language as tl

    def run(self: Any, src: Any, dst_type: Any, *rest: Any) -> Any:
        dst = dst_type.scalar
        if _is_bf16(src) == (dst == tl.bfloat16):
            return original(self, src, dst_type, *rest)
        values = to_f32(src.data) if _is_bf16(src) else np.asarray(src.data).astype(np.float32)
        if dst == tl.bfloat16:
            return interpreter.TensorHandle(from_f32(values), tl.bfloat16)
        return interpreter.TensorHandle(values.astype(interpreter._get_np_dtype(dst)), dst)

    return run


def _sum(original: Method) -> Method:
    def run(self: Any, input: Any) -> Any:
        if not _is_bf16(input.handle):
            return original(self, input)
        total = np.sum(to_f32(input.handle.data), axis=self.axis, keepdims=self.keep_dims)
        return self.to_tensor(from_f32(total), input.dtype)

    return run


def _min_max(original: Method) -> Method:
    import triton.language as tl

    def run(self: Any, input: Any, val_reduce_op: Any, idx_reduce_op: Any = None) -> Any:
        tensor = input[0] if isinstance(input, tuple) else input
        if not _is_bf16(tensor.handle):
            return original(self, input, val_reduce_op, idx_reduce_op)
        values = to_f32(tensor.handle.data)
        found = []
        if val_reduce_op:
            reduced = val_reduce_op(values, axis=self.axis, keepdims=self.keep_dims)
            found.append(self.to_tensor(from_f32(reduced), tensor.dtype))
        if idx_reduce_op:
            index = idx_reduce_op(values, axis=self.axis, keepdims=self.keep_dims)
            found.append(self.to_tensor(index, tl.int32))
        return tuple(found) if len(found) > 1 else found[0]

    return run


def _dot(original: Method, interpreter: ModuleType) -> Method:
    """``tl.dot`` on bf16 operands multiplies their values in float32, accumulating in the
    accumulator's dtype (float32 unless it is bf16 itself, then rounded back), as tensor cores do."""

    def run(self: Any, a: Any, b: Any, d: Any, *rest: Any) -> Any:
        if not (_is_bf16(a) or _is_bf16(b) or _is_bf16(d)):
            return original(self, a, b, d, *rest)
        wide = [_widen(h, interpreter) for h in (a, b, d)]
        result = original(self, *wide, *rest)
        return _narrow(result, d, interpreter) if _is_bf16(d) else result

    return run


def get_bf16(self: Any, value: float) -> Any:
    """A bf16 constant (``0.5 * x`` on a bf16 tensor): the builder method Triton 3.5 lacks."""
    import triton.language as tl
    from triton.runtime import interpreter

    return interpreter.TensorHandle(from_f32(np.array([value], dtype=np.float32)), tl.bfloat16)


BUILDER_WRAPPERS: Mapping[str, Callable[[Method, ModuleType], Method]] = {
    "binary_op": _elementwise,
    "unary_op": _elementwise,
    "ternary_op": _ternary,
    "create_fma": _elementwise,
    "create_rsqrt": _elementwise,
    "create_erf": _elementwise,
    "cast_impl": _cast,
    "create_fp_to_fp": _cast,
    "create_dot": _dot,
}

REDUCE_WRAPPERS: Mapping[str, Callable[[Method], Method]] = {"sum": _sum, "min_max": _min_max}
