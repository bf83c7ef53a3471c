"""Forward and backward of a differentiable entry point, compared per input with the gradients
autograd takes of the float64 torch reference; a wrong gradient is named ("grad of x")."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from cuship.check import Impl, Op, Scalar, Tensor
from cuship.check.case.compare import Tolerance
from cuship.check.case.engines import run_case
from cuship.check.declare.inputs import plan_cases
from cuship.check.declare.registry import DeclarationError

torch = pytest.importorskip("torch")

F32 = Tolerance(rtol=1e-5, atol=1e-5)


def _scale_ref(x: Any, w: Any, k: float) -> Any:
    return torch.tanh(x) * w * k


def _function(dx_wrong: bool = False, no_dw: bool = False) -> Any:
    function: Any = torch.autograd.Function

    class Scale(function):  # type: ignore[misc]
        @staticmethod
        def forward(ctx: Any, x: Any, w: Any, k: float) -> Any:
            ctx.save_for_backward(x, w)
            ctx.k = k
            return torch.tanh(x) * w * k

        @staticmethod
        def backward(ctx: Any, dy: Any) -> Any:
            x, w = ctx.saved_tensors
            t = torch.tanh(x)
            dx = dy * w * ctx.k * (1 - t * t if not dx_wrong else 1 - t)
            dw = None if no_dw else (dy * t * ctx.k).sum(0)
            return dx, dw, None

    return Scale.apply


def _op(fn: Any, **extra: Any) -> Op:
    return Op(
        name="scale",
        reference=_scale_ref,
        inputs=(
            Tensor(name="x", dims=("rows", "cols")),
            Tensor(name="w", dims=("cols",)),
            Scalar(name="k", values=(0.5,)),
        ),
        shapes=({"rows": 3, "cols": 17},),
        impls=(Impl(kind="native", fn=fn),),
        grads=("x", "w"),
        **extra,
    )


def _run(op: Op, dtype: str = "float32", tol: Tolerance = F32) -> dict[str, Any]:
    (case,) = plan_cases(op, dtype, seed=3, extended=False, all_distributions=False, fuzz=0)
    return run_case(op, "native", dtype, case, tol)


def test_a_correct_backward_passes_with_every_gradient_compared() -> None:
    result = _run(_op(_function()))
    assert result["status"] == "passed", result["message"]
    assert result["total"] == 3 * 17 + 3 * 17 + 17  # the output, grad of x, grad of w


def test_a_wrong_gradient_fails_and_is_named() -> None:
    result = _run(_op(_function(dx_wrong=True)))
    assert result["status"] == "failed"
    assert result["output"] == "grad of x"
    assert "grad of x: " in result["message"]
    assert "grad of w" not in result["message"]


def test_a_missing_gradient_fails_and_is_named() -> None:
    result = _run(_op(_function(no_dw=True)))
    assert result["status"] == "failed"
    assert "grad of w: the backward gives no gradient (None)" in result["message"]


def test_an_output_without_a_grad_fn_is_an_error_that_says_so() -> None:
    result = _run(_op(lambda x, w, k: (torch.tanh(x) * w * k).detach()))
    assert result["status"] == "error"
    assert "not differentiable" in result["message"]


def test_bf16_gradients_use_the_grad_tolerances_of_the_dtype() -> None:
    loose = Tolerance(rtol=1.6e-2, atol=1e-5)
    strict = _run(_op(_function(), dtypes=("bfloat16",)), "bfloat16", Tolerance(rtol=0, atol=0))
    relaxed = _run(
        _op(_function(), dtypes=("bfloat16",), grad_tolerances={"bfloat16": (5e-2, 5e-2)}),
        "bfloat16",
        loose,
    )
    assert strict["status"] == "failed"
    assert relaxed["status"] == "passed", relaxed["message"]


def test_a_numpy_reference_is_refused_with_the_reason() -> None:
    op = _op(_function())
    with pytest.raises(TypeError, match="must compute with torch"):
        _run(replace(op, reference=_numpy_ref))


def _numpy_ref(x: Any, w: Any, k: float) -> Any:
    return np.tanh(x.detach().numpy()) * w.detach().numpy() * k


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"grads": ("y",)}, "unknown input in grads 'y'"),
        ({"grads": ("k",)}, "unknown input in grads 'k'"),
        ({"impls": (Impl(kind="numba", fn=print),)}, "numba kernels take NumPy"),
        ({"outputs": (Tensor(name="x", dims=("rows", "cols")),)}, "written in place"),
    ],
)
def test_grads_that_cannot_be_checked_are_declaration_errors(
    change: dict[str, Any], problem: str
) -> None:
    fields: dict[str, Any] = {
        "name": "scale",
        "reference": _scale_ref,
        "inputs": (
            Tensor(name="x", dims=("rows", "cols")),
            Tensor(name="w", dims=("cols",)),
            Scalar(name="k", values=(0.5,)),
        ),
        "shapes": ({"rows": 3, "cols": 17},),
        "impls": (Impl(kind="native", fn=print),),
        "grads": ("x",),
    }
    with pytest.raises(DeclarationError, match=problem):
        Op(**{**fields, **change})
