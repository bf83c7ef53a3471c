"""Running one case in-process on the native engine: poisoned outputs, invariants, exceptions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from cuship.check import Impl, Invariant, Op, Tensor
from cuship.check.case.compare import Tolerance
from cuship.check.case.engines import run_case
from cuship.check.declare.inputs import plan_cases
from cuship.check.declare.registry import DeclarationError

F32 = Tolerance(rtol=1.3e-6, atol=1e-5)


def _double_ref(x: Any) -> Any:
    return 2 * x


def _double(x: Any, out: Any) -> None:
    np.multiply(x, 2, out=out)


def _double_but_last(x: Any, out: Any) -> None:
    out[:-1] = 2 * x[:-1]  # leaves the last element as it was: poisoned


def _raises(x: Any, out: Any) -> None:
    raise NotImplementedError("inline_asm_elementwise")


def _positive(inputs: Mapping[str, Any], out: Any, rtol: float, atol: float) -> str | None:
    return None if (out >= 0).all() else "negative output"


def _op(fn: Any, invariants: tuple[Invariant, ...] = ()) -> Op:
    return Op(
        name="double",
        reference=_double_ref,
        inputs=(Tensor(name="x", dims=("n",)),),
        outputs=(Tensor(name="out", dims=("n",)),),
        shapes=({"n": 37},),
        impls=(Impl(kind="native", fn=fn),),
        invariants=invariants,
    )


def _run(op: Op) -> dict[str, Any]:
    (case,) = plan_cases(op, "float32", seed=5, extended=False, all_distributions=False, fuzz=0)
    return run_case(op, "native", "float32", case, F32)


def test_correct_kernel_passes_with_figures() -> None:
    result = _run(_op(_double))
    assert result["status"] == "passed"
    assert result["total"] == 37
    assert result["max_abs"] == 0.0
    assert result["kernel_s"] >= 0.0


def test_unwritten_output_element_is_caught_by_the_poison() -> None:
    result = _run(_op(_double_but_last))
    assert result["status"] == "failed"
    assert result["mismatches"] == 1
    assert result["worst_index"] == [36]
    assert np.isnan(result["worst_actual"])


def test_exception_in_the_kernel_is_an_error_with_its_message() -> None:
    result = _run(_op(_raises))
    assert result["status"] == "error"
    assert "NotImplementedError: inline_asm_elementwise" in result["message"]


def test_invariant_violation_fails_a_close_result() -> None:
    result = _run(_op(_double, (Invariant(name="non-negative", check=_positive),)))
    assert result["status"] == "failed"
    assert "'non-negative' violated: negative output" in result["message"]


def test_return_value_is_checked_when_no_outputs_are_declared() -> None:
    op = Op(
        name="total",
        reference=lambda x: np.sum(x),
        inputs=(Tensor(name="x", dims=("n",)),),
        shapes=({"n": 100},),
        dtypes=("int64",),
        impls=(Impl(kind="native", fn=lambda x: int(x.sum()) + 1),),
    )
    (case,) = plan_cases(op, "int64", seed=1, extended=False, all_distributions=False, fuzz=0)
    result = run_case(op, "native", "int64", case, Tolerance(rtol=0.0, atol=0.0))
    assert result["status"] == "failed"
    assert result["max_abs"] == 1.0


def _sum_ref(x: Any, y: Any) -> Any:
    return x + y


def _sum_of_rounded_terms(x: Any, y: Any, out: Any) -> None:
    """x + y off by a millionth of the terms' size, as a kernel that rounds its terms is."""
    out[...] = (x + y) + np.float32(1e-6) * (np.abs(x) + np.abs(y))


def test_an_ops_scale_is_called_like_the_reference_and_widens_its_yardstick() -> None:
    seen: list[tuple[str, ...]] = []

    def scale(**terms: Any) -> Any:
        seen.append(tuple(sorted(terms)))
        return np.abs(terms["x"]) + np.abs(terms["y"])

    def op(**extra: Any) -> Op:
        return Op(
            name="sum",
            reference=_sum_ref,
            inputs=(  # terms near 1.5e4 whose sum is anywhere in [-1e4, 1e4]
                Tensor(name="x", dims=("n",), low=1e4, high=2e4),
                Tensor(name="y", dims=("n",), low=-2e4, high=-1e4),
            ),
            outputs=(Tensor(name="out", dims=("n",)),),
            shapes=({"n": 64},),
            distributions=("uniform",),
            impls=(Impl(kind="native", fn=_sum_of_rounded_terms),),
            **extra,
        )

    assert _run(op())["status"] == "failed"  # 0.03 off a sum of maybe 5: "2e-3 relative"
    held = _run(op(scale=scale))
    assert held["status"] == "passed", held
    assert 0.5e-6 < held["max_rel"] < 1.3e-6  # relative to the terms' size
    assert seen == [("x", "y")]


def test_a_scale_that_is_not_a_function_is_a_declaration_error() -> None:
    with pytest.raises(DeclarationError, match=r"scale is 2\.0, not a function"):
        Op(
            name="sum",
            reference=_sum_ref,
            inputs=(Tensor(name="x", dims=("n",)), Tensor(name="y", dims=("n",))),
            shapes=({"n": 4},),
            impls=(Impl(kind="native", fn=_sum_of_rounded_terms),),
            scale=2.0,  # type: ignore[arg-type]
        )
