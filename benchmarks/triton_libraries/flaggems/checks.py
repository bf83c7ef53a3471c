"""FlagGems 5.0.2's ops, as a maintainer would declare them: each op's float64 reference, its
inputs and tolerances. Nothing of FlagGems is patched; ``device`` is the device selection."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import device  # noqa: F401 - device selection, before FlagGems is imported
import numpy as np

from cuship.check import Impl, Op, Scalar, Tensor

DTYPES = ("float32", "bfloat16", "float16")
ROWS = ({"rows": 1, "cols": 1}, {"rows": 3, "cols": 200})
WIDE = ({"rows": 2, "cols": 1000}, {"rows": 5, "cols": 4099})
X = Tensor(name="x", dims=("rows", "cols"))
Y = Tensor(name="y", dims=("rows", "cols"))
W = Tensor(name="w", dims=("cols",))
B = Tensor(name="b", dims=("cols",))
EPS = Scalar(name="eps", values=(1e-5, 1e-6))


def _gems(name: str, **fixed: Any) -> Callable[..., Any]:
    """An entry point that calls ``flag_gems.ops.<name>`` with the case's inputs."""

    def call(*args: Any, **kwargs: Any) -> Any:
        import flag_gems.ops

        return getattr(flag_gems.ops, name)(*args, **kwargs, **fixed)

    call.__name__ = name
    return call


def _triton(name: str, fn: Callable[..., Any]) -> tuple[Impl, ...]:
    fn.__name__ = name
    return (Impl(kind="triton", fn=fn),)


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _softmax(x: Any) -> Any:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _log_softmax(x: Any) -> Any:
    top = x.max(axis=-1, keepdims=True)
    return x - top - np.log(np.exp(x - top).sum(axis=-1, keepdims=True))


def _layer_norm(x: Any, w: Any, b: Any, eps: float) -> Any:
    centred = x - x.mean(axis=1, keepdims=True)
    return centred / np.sqrt((centred * centred).mean(axis=1, keepdims=True) + eps) * w + b


def _rms_norm(x: Any, w: Any, eps: float) -> Any:
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps) * w


def _pointwise(name: str, reference: Callable[..., Any], *inputs: Tensor, **extra: Any) -> Op:
    names = [t.name for t in inputs]
    return Op(
        name=name,
        reference=reference,
        impls=_triton(name, lambda **kw: _gems(name)(*(kw[n] for n in names))),
        inputs=inputs,
        shapes=ROWS,
        extended_shapes=WIDE,
        fuzz_dims={"cols": (1, 300)},
        dtypes=DTYPES,
        **extra,
    )


BOUNDED = Tensor(name="x", dims=("rows", "cols"), low=-10.0, high=10.0)

OPS = (
    _pointwise("add", lambda x, y: x + y, X, Y),
    _pointwise("mul", lambda x, y: x * y, X, Y),
    _pointwise("sub", lambda x, y: x - y, X, Y),
    _pointwise("gelu", lambda x: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0))), X),
    _pointwise("silu", lambda x: x / (1.0 + np.exp(-x)), X),
    _pointwise("sigmoid", lambda x: 1.0 / (1.0 + np.exp(-x)), X),
    _pointwise("exp", lambda x: np.exp(x), BOUNDED),
    _pointwise("tanh", lambda x: np.tanh(x), X),
    Op(
        name="softmax",
        reference=_softmax,
        impls=_triton("softmax", lambda x: _gems("softmax")(x, -1)),
        inputs=(X,),
        shapes=ROWS,
        extended_shapes=WIDE,
        fuzz_dims={"cols": (1, 300)},
        crosses={"cols": (32768,)},  # above it the kernel loops over tiles of 4096
        dtypes=DTYPES,
    ),
    Op(
        name="log_softmax",
        reference=_log_softmax,
        impls=_triton("log_softmax", lambda x: _gems("log_softmax")(x, -1)),
        inputs=(X,),
        shapes=ROWS,
        extended_shapes=WIDE,
        fuzz_dims={"cols": (1, 300)},
        dtypes=DTYPES,
        scale=lambda x: np.abs(x) + np.abs(x).max(axis=-1, keepdims=True),
    ),
    Op(
        name="layer_norm",
        reference=_layer_norm,
        impls=_triton(
            "layer_norm", lambda x, w, b, eps: _gems("layer_norm")(x, [x.shape[1]], w, b, eps)[0]
        ),
        inputs=(X, W, B, EPS),
        shapes=({"rows": 3, "cols": 100},),
        extended_shapes=WIDE,
        fuzz_dims={"cols": (2, 300)},
        crosses={"cols": (128, 4096)},  # three kernels: N <= 128, <= 4096, looped above
        dtypes=DTYPES,
        tolerances={"float32": (1e-5, 1e-5)},
    ),
    Op(
        name="rms_norm",
        reference=_rms_norm,
        impls=_triton("rms_norm", lambda x, w, eps: _gems("rms_norm")(x, [x.shape[1]], w, eps)),
        inputs=(X, W, EPS),
        shapes=ROWS,
        extended_shapes=WIDE,
        fuzz_dims={"cols": (1, 300)},
        dtypes=DTYPES,
        distributions=("normal", "uniform", "small"),
        tolerances={"float32": (1e-5, 1e-5)},
    ),
    Op(
        name="sum_dim",
        reference=lambda x: x.sum(axis=1),
        impls=_triton("sum_dim", lambda x: _gems("sum_dim")(x, [1])),
        inputs=(X,),
        shapes=ROWS,
        extended_shapes=WIDE,
        fuzz_dims={"cols": (1, 300)},
        dtypes=DTYPES,
        scale=lambda x: np.abs(x).sum(axis=1),
    ),
    Op(
        name="mean_dim",
        reference=lambda x: x.mean(axis=1),
        impls=_triton("mean_dim", lambda x: _gems("mean_dim")(x, [1])),
        inputs=(X,),
        shapes=ROWS,
        extended_shapes=WIDE,
        fuzz_dims={"cols": (1, 300)},
        dtypes=DTYPES,
        scale=lambda x: np.abs(x).mean(axis=1),
    ),
    Op(
        name="amax",
        reference=lambda x: x.max(axis=1),
        impls=_triton("amax", lambda x: _gems("amax")(x, [1])),
        inputs=(X,),
        shapes=ROWS,
        extended_shapes=WIDE,
        fuzz_dims={"cols": (1, 300)},
        dtypes=DTYPES,
    ),
    Op(
        name="cumsum",
        reference=lambda x: np.cumsum(x, axis=1),
        impls=_triton("cumsum", lambda x: _gems("cumsum")(x, 1)),
        inputs=(X,),
        shapes=ROWS,
        extended_shapes=WIDE,
        fuzz_dims={"cols": (1, 300)},
        dtypes=DTYPES,
        scale=lambda x: np.cumsum(np.abs(x), axis=1),
    ),
    Op(
        name="addmm",
        reference=lambda c, a, b: c + a @ b,
        impls=_triton("addmm", lambda c, a, b: _gems("addmm")(c, a, b)),
        inputs=(
            Tensor(name="c", dims=("m", "n")),
            Tensor(name="a", dims=("m", "k")),
            Tensor(name="b", dims=("k", "n")),
        ),
        shapes=({"m": 1, "k": 1, "n": 1}, {"m": 33, "k": 40, "n": 20}),
        extended_shapes=({"m": 65, "k": 130, "n": 70},),
        fuzz_dims={"k": (1, 100)},
        dtypes=DTYPES,
        scale=lambda c, a, b: np.abs(c) + np.abs(a) @ np.abs(b),
    ),
)
