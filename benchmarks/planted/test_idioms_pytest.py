"""The idiom kernels' tests as a project would write them in pytest (fixed shapes, torch
inputs, float64 references), for benchmarks/bench_planted_bugs.py to time under
TRITON_INTERPRET=1. cuship's interpreter adaptation is applied by a fixture: without it the
kernels do not run in the interpreter at all."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest
import torch

from cuship.check.interpret.adapt import adapted

DTYPES = (torch.float32, torch.bfloat16, torch.float16)
TOL = {torch.float32: (1e-5, 1e-4), torch.bfloat16: (1.6e-2, 2e-2), torch.float16: (1e-3, 2e-3)}
SHAPES = ((1, 2), (3, 100), (2, 129), (2, 257))


@pytest.fixture(autouse=True)
def _interpreter() -> Iterator[None]:
    torch.manual_seed(0)
    with adapted():
        yield


def _close(actual: Any, expected: Any, dtype: torch.dtype) -> None:
    rtol, atol = TOL[dtype]
    torch.testing.assert_close(actual.double(), expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("scale", (1.0, 1e-3))
def test_rms_norm(dtype: torch.dtype, shape: tuple[int, int], scale: float) -> None:
    from idioms.norms import rms_norm

    x = (torch.randn(shape) * scale).to(dtype)
    w = torch.randn(shape[1]).to(dtype)
    y, rstd = torch.empty_like(x), torch.empty(shape[0])
    rms_norm(x, w, 1e-6, y, rstd)
    xd = x.double()
    expected = xd * torch.rsqrt((xd * xd).mean(1, keepdim=True) + 1e-6) * w.double()
    _close(y, expected, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_rms_norm_backward(dtype: torch.dtype, shape: tuple[int, int]) -> None:
    from idioms.norms import RMSNorm

    x = torch.randn(shape).to(dtype).requires_grad_()
    w = torch.randn(shape[1]).to(dtype).requires_grad_()
    dy = torch.randn(shape).to(dtype)
    dx, dw = torch.autograd.grad(RMSNorm.apply(x, w, 1e-6), (x, w), dy)
    xd, wd = (t.detach().double().requires_grad_() for t in (x, w))
    y = xd * torch.rsqrt((xd * xd).mean(1, keepdim=True) + 1e-6) * wd
    dxd, dwd = torch.autograd.grad(y, (xd, wd), dy.double())
    _close(dx, dxd, dtype)
    _close(dw, dwd, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", (*SHAPES, (2, 1000)))
def test_layer_norm(dtype: torch.dtype, shape: tuple[int, int]) -> None:
    from idioms.norms import layer_norm

    x, w, b = (torch.randn(s).to(dtype) for s in (shape, shape[1], shape[1]))
    y = torch.empty_like(x)
    layer_norm(x, w, b, 1e-5, y)
    expected = torch.nn.functional.layer_norm(x.double(), shape[1:], w.double(), b.double(), 1e-5)
    _close(y, expected, dtype)


def _gelu(a: Any) -> Any:
    return 0.5 * a * (1 + torch.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a**3)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_swiglu_and_geglu(dtype: torch.dtype, shape: tuple[int, int]) -> None:
    from idioms.activations import geglu, swiglu

    a, b = torch.randn(shape).to(dtype), torch.randn(shape).to(dtype)
    c = torch.empty_like(a)
    swiglu(a, b, c)
    _close(c, torch.nn.functional.silu(a.double()) * b.double(), dtype)
    geglu(a, b, c)
    _close(c, _gelu(a.double()) * b.double(), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_geglu_backward_in_place(dtype: torch.dtype, shape: tuple[int, int]) -> None:
    from idioms.activations import geglu_backward

    a, b, dc = (torch.randn(shape).to(dtype) for _ in range(3))
    a64, b64 = a.double().requires_grad_(), b.double().requires_grad_()
    (_gelu(a64) * b64).backward(dc.double())
    geglu_backward(dc, a, b)
    _close(a, a64.grad, dtype)
    _close(b, b64.grad, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ((4, 3, 16), (5, 4, 8)))
def test_rope_in_place(dtype: torch.dtype, shape: tuple[int, int, int]) -> None:
    from idioms.rope import rope

    tokens, _, dim = shape
    q = torch.randn(shape).to(dtype)
    angle = torch.rand(tokens, dim // 2) * 6.0
    cos, sin = angle.cos().to(dtype), angle.sin().to(dtype)
    q0, c, s = q.double(), cos.double()[:, None], sin.double()[:, None]
    x1, x2 = q0[..., : dim // 2], q0[..., dim // 2 :]
    expected = torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)
    rope(q, cos, sin)
    _close(q, expected, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ((8, 100), (4, 1000), (3, 257)))
def test_cross_entropy(dtype: torch.dtype, shape: tuple[int, int]) -> None:
    from idioms.cross_entropy import cross_entropy

    x = torch.randn(shape).to(dtype)
    target = torch.randint(0, shape[1], (shape[0],))
    target[0] = -100
    loss = torch.empty(shape[0])
    cross_entropy(x, target, loss, -100)
    expected = torch.nn.functional.cross_entropy(
        x.double(), target, ignore_index=-100, reduction="none"
    )
    _close(loss, expected, torch.float32)
