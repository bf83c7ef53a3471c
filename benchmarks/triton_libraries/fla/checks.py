"""flash-linear-attention's kernels (fla-core 0.6.0), as a maintainer would declare them: norms,
gated activations, chunked cumulative sums and the simple-GLA recurrence, each against a float64
reference. No shim: fla runs its Triton kernels on a CPU by itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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


def _entry(name: str, call: Callable[..., Any]) -> tuple[Impl, ...]:
    call.__name__ = name
    return (Impl(kind="triton", fn=call),)


def _l2norm(x: Any) -> Any:
    from fla.modules.l2norm import l2_norm

    return l2_norm(x)


def _rms_norm(x: Any, w: Any, eps: float) -> Any:
    from fla.modules.layernorm import rms_norm

    return rms_norm(x, w, None, eps=eps)


def _layer_norm(x: Any, w: Any, b: Any, eps: float) -> Any:
    from fla.modules.layernorm import layer_norm

    return layer_norm(x, w, b, eps=eps)


def _activation(name: str) -> Callable[..., Any]:
    def call(**inputs: Any) -> Any:
        from fla.modules import activations

        return getattr(activations, name)(*inputs.values())

    return call


def _cumsum(g: Any) -> Any:
    from fla.ops.utils.cumsum import chunk_local_cumsum

    return chunk_local_cumsum(g, chunk_size=16)


def _chunk_cumsum_ref(g: Any) -> Any:
    return np.concatenate(
        [np.cumsum(c, axis=1) for c in np.split(g, range(16, g.shape[1], 16), 1)], 1
    )


def _softmax(x: Any) -> Any:
    from fla.ops.utils.softmax import softmax_fwd

    return softmax_fwd(x)


def _softmax_ref(x: Any) -> Any:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _gla_ref(q: Any, k: Any, v: Any, g: Any) -> Any:
    """o[t] = q[t] S[t] / sqrt(K), S[t] = exp(g[t]) S[t-1] + k[t]^T v[t], per batch and head."""
    batch, steps, heads, dim = q.shape
    out = np.zeros((*q.shape[:3], v.shape[-1]))
    for b in range(batch):
        for h in range(heads):
            state = np.zeros((dim, v.shape[-1]))
            for t in range(steps):
                state = np.exp(g[b, t, h]) * state + np.outer(k[b, t, h], v[b, t, h])
                out[b, t, h] = q[b, t, h] @ state / np.sqrt(dim)
    return out


def _gla_scale(q: Any, k: Any, v: Any, g: Any) -> Any:
    return _gla_ref(np.abs(q), np.abs(k), np.abs(v), g)


def _gla(kind: str) -> Callable[..., Any]:
    def call(q: Any, k: Any, v: Any, g: Any) -> Any:
        from fla.ops import simple_gla

        return getattr(simple_gla, f"{kind}_simple_gla")(q, k, v, g=g)[0]

    return call


GLA_INPUTS = (
    Tensor(name="q", dims=("batch", "steps", "heads", "dim")),
    Tensor(name="k", dims=("batch", "steps", "heads", "dim")),
    Tensor(name="v", dims=("batch", "steps", "heads", "dim")),
    Tensor(name="g", dims=("batch", "steps", "heads"), dtype="float32", low=-1.0, high=-0.01),
)
GLA_SHAPES = (
    {"batch": 1, "steps": 5, "heads": 1, "dim": 16},
    {"batch": 2, "steps": 70, "heads": 2, "dim": 32},
)


def _gla_op(kind: str) -> Op:
    return Op(
        name=f"{kind}_simple_gla",
        reference=_gla_ref,
        impls=_entry(kind, _gla(kind)),
        inputs=GLA_INPUTS,
        shapes=GLA_SHAPES,
        extended_shapes=({"batch": 1, "steps": 130, "heads": 1, "dim": 64},),
        dtypes=DTYPES,
        scale=_gla_scale,
        tolerances={"float32": (1e-5, 1e-5)},
    )


def _pointwise(name: str, reference: Callable[..., Any], *inputs: Tensor) -> Op:
    return Op(
        name=name,
        reference=reference,
        impls=_entry(name, _activation(name)),
        inputs=inputs,
        shapes=ROWS,
        extended_shapes=WIDE,
        fuzz_dims={"cols": (1, 300)},
        dtypes=DTYPES,
    )


OPS = (
    Op(
        name="l2norm",
        reference=lambda x: x / np.sqrt((x * x).sum(axis=-1, keepdims=True) + 1e-6),
        impls=_entry("l2norm", _l2norm),
        inputs=(X,),
        shapes=ROWS,
        extended_shapes=WIDE,
        fuzz_dims={"cols": (1, 300)},
        dtypes=DTYPES,
        distributions=("normal", "uniform", "small"),  # "small": where its eps matters
        tolerances={"float32": (1e-5, 1e-5)},
    ),
    Op(
        name="rms_norm",
        reference=lambda x, w, eps: x / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps) * w,
        impls=_entry("rms_norm", _rms_norm),
        inputs=(X, W, EPS),
        shapes=ROWS,
        extended_shapes=WIDE,
        fuzz_dims={"cols": (1, 300)},
        dtypes=DTYPES,
        distributions=("normal", "uniform", "small"),
        tolerances={"float32": (1e-5, 1e-5)},
    ),
    Op(
        name="layer_norm",
        reference=lambda x, w, b, eps: (
            (x - x.mean(axis=1, keepdims=True)) / np.sqrt(x.var(axis=1, keepdims=True) + eps) * w
            + b
        ),
        impls=_entry("layer_norm", _layer_norm),
        inputs=(X, W, B, EPS),
        shapes=ROWS[1:],
        extended_shapes=WIDE,
        fuzz_dims={"cols": (2, 300)},
        dtypes=DTYPES,
        tolerances={"float32": (1e-5, 1e-5)},
    ),
    _pointwise("swiglu", lambda x, y: x / (1.0 + np.exp(-x)) * y, X, Y),
    _pointwise("logsigmoid", lambda x: -np.logaddexp(0.0, -x), X),
    _pointwise("swish", lambda x: x / (1.0 + np.exp(-x)), X),
    Op(
        name="chunk_local_cumsum",
        reference=_chunk_cumsum_ref,
        impls=_entry("chunk_local_cumsum", _cumsum),
        inputs=(Tensor(name="g", dims=("batch", "steps", "heads")),),
        shapes=({"batch": 1, "steps": 5, "heads": 1}, {"batch": 2, "steps": 70, "heads": 3}),
        extended_shapes=({"batch": 1, "steps": 257, "heads": 4},),
        dtypes=("float32",),
        scale=lambda g: _chunk_cumsum_ref(np.abs(g)),
    ),
    Op(
        name="softmax",
        reference=_softmax_ref,
        impls=_entry("softmax", _softmax),
        inputs=(X,),
        shapes=ROWS,
        extended_shapes=WIDE,
        fuzz_dims={"cols": (1, 300)},
        dtypes=DTYPES,
    ),
    _gla_op("fused_recurrent"),
    _gla_op("chunk"),
)
