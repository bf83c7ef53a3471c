"""libdevice math for the Triton interpreter: NumPy elementwise functions in the argument's dtype.

Used by :mod:`cuship.check.interpret.adapt` only, while a case runs. A function not in the table raises
NotImplementedError naming it, instead of the stub's silent None.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

__all__ = ["emulation"]

Array = Any


def _vectorize(fn: Callable[..., float]) -> Callable[..., Array]:
    return lambda *xs: np.vectorize(fn, otypes=[np.float64])(*xs)


def _round_half_away(x: Array) -> Array:
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


def _rounding_variants(base: str, fn: Callable[..., Array]) -> dict[str, Callable[..., Array]]:
    """``div`` -> div_rn, div_rz, div_rd, div_ru: all round to nearest here (within one ulp)."""
    return {f"{base}_{mode}": fn for mode in ("rn", "rz", "rd", "ru")}


_UNARY: Mapping[str, Callable[[Array], Array]] = {
    "abs": np.abs,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "rint": np.rint,
    "nearbyint": np.rint,
    "round": _round_half_away,
    "sqrt": np.sqrt,
    **_rounding_variants("sqrt", np.sqrt),
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "rsqrt_rn": lambda x: 1.0 / np.sqrt(x),
    **_rounding_variants("rcp", lambda x: 1.0 / x),
    "exp": np.exp,
    "fast_expf": np.exp,
    "exp2": np.exp2,
    "exp10": lambda x: np.power(10.0, x),
    "fast_exp10f": lambda x: np.power(10.0, x),
    "expm1": np.expm1,
    "log": np.log,
    "fast_logf": np.log,
    "log2": np.log2,
    "fast_log2f": np.log2,
    "log10": np.log10,
    "fast_log10f": np.log10,
    "log1p": np.log1p,
    "sin": np.sin,
    "fast_sinf": np.sin,
    "cos": np.cos,
    "fast_cosf": np.cos,
    "tan": np.tan,
    "fast_tanf": np.tan,
    "sinpi": lambda x: np.sin(np.pi * x),
    "cospi": lambda x: np.cos(np.pi * x),
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "cbrt": np.cbrt,
    "rcbrt": lambda x: 1.0 / np.cbrt(x),
    "erf": _vectorize(math.erf),
    "erfc": _vectorize(math.erfc),
    "lgamma": _vectorize(math.lgamma),
    "tgamma": _vectorize(math.gamma),
    "saturatef": lambda x: np.clip(x, 0.0, 1.0),
}

_BINARY: Mapping[str, Callable[[Array, Array], Array]] = {
    "pow": np.power,
    "fast_powf": np.power,
    "atan2": np.arctan2,
    "hypot": np.hypot,
    "fmod": np.fmod,
    "remainder": _vectorize(math.remainder),
    "copysign": np.copysign,
    "nextafter": np.nextafter,
    "fdim": lambda x, y: np.maximum(x - y, 0.0),
    "fast_dividef": np.divide,
    **_rounding_variants("div", np.divide),
    **_rounding_variants("add", np.add),
    **_rounding_variants("sub", np.subtract),
    **_rounding_variants("mul", np.multiply),
}


def _fma(x: Array, y: Array, z: Array) -> Array:
    return np.add(np.multiply(x, y, dtype=np.float64), z, dtype=np.float64)


_TERNARY: Mapping[str, Callable[[Array, Array, Array], Array]] = {
    "fma": _fma,
    **_rounding_variants("fma", _fma),
}

# Predicates return int32, as libdevice's do.
_PREDICATES: Mapping[str, Callable[[Array], Array]] = {
    "isnan": np.isnan,
    "isinf": np.isinf,
    "finitef": np.isfinite,
    "isfinited": np.isfinite,
    "signbit": np.signbit,
}

_TABLE: Mapping[str, Callable[..., Array]] = {**_UNARY, **_BINARY, **_TERNARY, **_PREDICATES}


@functools.cache
def emulation(name: str) -> Callable[..., Any]:
    """The interpreter's stand-in for ``libdevice.<name>`` (one object per name)."""
    fn = _TABLE.get(name)

    def call(*args: Any, **kwargs: Any) -> Any:
        if fn is None:
            raise NotImplementedError(
                f"libdevice.{name} has no emulation in cuship's Triton interpreter adapter; "
                "check this op with --device cuda, or declare Impl(uses=('libdevice',)) to skip it"
            )
        return _apply(name, fn, args)

    call.__name__ = name
    call.__qualname__ = f"libdevice.{name}"
    # A stub's module: JITFunction's dependency walk (cache_key) passes over libdevice stubs and
    # refuses any other plain function a kernel's globals name.
    call.__module__ = "triton.language.extra.libdevice"
    return call


def _apply(name: str, fn: Callable[..., Array], args: tuple[Any, ...]) -> Any:
    import triton.language as tl
    from triton.runtime import interpreter

    tensors = [tl.core.to_tensor(a, _semantic=interpreter.interpreter_semantic) for a in args]
    first = next((t for a, t in zip(args, tensors, strict=True) if isinstance(a, tl.tensor)), None)
    dtype = (first or tensors[0]).dtype.scalar
    if dtype not in (tl.float32, tl.float64):
        raise TypeError(
            f"libdevice.{name} takes float32 or float64, got {dtype} (as compiled Triton); "
            "upcast first: x.to(tl.float32)"
        )
    np_dtype = np.float32 if dtype == tl.float32 else np.float64
    with np.errstate(all="ignore"):
        data = fn(*(np.asarray(t.handle.data).astype(np_dtype) for t in tensors))
    out_dtype = tl.int32 if name in _PREDICATES else dtype
    out = np.asarray(data).astype(np.int32 if name in _PREDICATES else np_dtype)
    shapes = [list(t.type.shape) for t in tensors if t.type.is_block()]
    if not shapes:
        return tl.tensor(interpreter.TensorHandle(out, out_dtype), out_dtype)
    shape = list(np.broadcast_shapes(*(tuple(s) for s in shapes)))
    out = np.broadcast_to(out, shape).copy() if list(out.shape) != shape else out
    return tl.tensor(interpreter.TensorHandle(out, out_dtype), tl.block_type(out_dtype, shape))
