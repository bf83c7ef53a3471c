"""Cases and their inputs: deterministic per (seed, op, dtype, case), edge shapes, value kinds."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from cuship.check import Impl, Op, Scalar, Tensor, edge_sizes
from cuship.check.declare.inputs import bf16_round, crossing_size, make_inputs, plan_cases
from cuship.check.declare.registry import DeclarationError


def _ref(a: float, x: Any) -> Any:
    return a * x


OP = Op(
    name="scale",
    reference=_ref,
    inputs=(Scalar(name="a", values=(2.0, -3.0)), Tensor(name="x", dims=("rows", "cols"))),
    shapes=({"rows": 1, "cols": 1}, {"rows": 3, "cols": 1025}),
    extended_shapes=({"rows": 0, "cols": 4},),
    fuzz_dims={"cols": (1, 50)},
    dtypes=("float32", "float16", "bfloat16", "int32"),
    distributions=("normal", "denormal", "zeros", "inf", "nan"),
    impls=(Impl(kind="native", fn=_ref),),
)


def test_edge_sizes_straddle_the_block() -> None:
    sizes = edge_sizes(128)
    assert {1, 7, 127, 128, 129} <= set(sizes)
    assert all(s <= 200 for s in edge_sizes(128, limit=200))


def test_quick_plan_is_first_distribution_on_default_shapes_plus_fuzz() -> None:
    cases = plan_cases(OP, "float32", seed=1, extended=False, all_distributions=False, fuzz=2)
    assert [c.distribution for c in cases[:2]] == ["normal", "normal"]
    assert [dict(c.sizes) for c in cases[:2]] == [{"rows": 1, "cols": 1}, {"rows": 3, "cols": 1025}]
    # one past the largest power of two in cols' fuzz range 1..50: crosses a 32-wide block
    assert dict(cases[2].sizes) == {"rows": 1, "cols": 33}
    assert len(cases) == 5
    assert [c.index for c in cases] == [0, 1, 2, 3, 4]


def test_crossing_size_is_one_past_a_power_of_two_inside_the_range() -> None:
    assert crossing_size(1, 300) == 257
    assert crossing_size(1, 8) == 5
    assert crossing_size(100, 120) is None
    assert crossing_size(1, 2) is None


def test_thorough_plan_covers_every_scalar_combination() -> None:
    op = Op(
        name="scaled",
        reference=_ref,
        inputs=(
            Scalar(name="a", values=(1.0, 2.0, 3.0)),
            Scalar(name="b", values=(0.0, 1.0)),
            Tensor(name="x", dims=("n",)),
        ),
        shapes=({"n": 4},),
        impls=(Impl(kind="native", fn=_ref),),
    )
    cases = plan_cases(op, "float32", seed=0, extended=True, all_distributions=True, fuzz=0)
    assert {c.scalars for c in cases} == {
        (("a", a), ("b", b)) for a in (1.0, 2.0, 3.0) for b in (0.0, 1.0)
    }
    assert "a=1.0 b=0.0" in cases[0].label()
    inputs = make_inputs(op, "float32", cases[5])
    assert (inputs.values["a"], inputs.values["b"]) == (
        dict(cases[5].scalars)["a"],
        dict(cases[5].scalars)["b"],
    )


def test_integer_index_ranges_follow_a_dimension_and_take_the_ignore_value() -> None:
    op = Op(
        name="pick",
        reference=_ref,
        inputs=(Tensor(name="target", dims=("rows",), dtype="int64", high="vocab", ignore=-100),),
        shapes=({"rows": 400, "vocab": 7},),
        impls=(Impl(kind="native", fn=_ref),),
    )
    (case,) = plan_cases(op, "float32", seed=0, extended=False, all_distributions=False, fuzz=0)
    target = make_inputs(op, "float32", case).values["target"]
    kept = target[target != -100]
    assert kept.min() >= 0 and kept.max() < 7
    assert 0 < (target == -100).sum() < 400


def test_float_ranges_clip_and_bound_the_uniform_draw() -> None:
    op = Op(
        name="positive",
        reference=_ref,
        inputs=(Tensor(name="x", dims=("n",), low=0.5, high=2.0),),
        shapes=({"n": 500},),
        distributions=("normal", "uniform"),
        impls=(Impl(kind="native", fn=_ref),),
    )
    for case in plan_cases(op, "float32", seed=0, extended=True, all_distributions=True, fuzz=0):
        x = make_inputs(op, "float32", case).values["x"]
        assert x.min() >= 0.5 and x.max() <= 2.0


def test_thorough_plan_covers_every_shape_and_distribution() -> None:
    cases = plan_cases(OP, "float32", seed=1, extended=True, all_distributions=True, fuzz=3)
    assert len(cases) == 3 * 5 + 3
    assert {c.distribution for c in cases} == set(OP.distributions)
    assert {"rows": 0, "cols": 4} in [dict(c.sizes) for c in cases]


def test_config_shapes_are_added() -> None:
    cases = plan_cases(
        OP,
        "float32",
        seed=1,
        extended=False,
        all_distributions=False,
        fuzz=0,
        extra_shapes=({"rows": 2, "cols": 3},),
    )
    assert {"rows": 2, "cols": 3} in [dict(c.sizes) for c in cases]


def test_same_seed_same_values_other_seed_other_values() -> None:
    first = plan_cases(OP, "float32", seed=7, extended=False, all_distributions=False, fuzz=2)
    again = plan_cases(OP, "float32", seed=7, extended=False, all_distributions=False, fuzz=2)
    other = plan_cases(OP, "float32", seed=8, extended=False, all_distributions=False, fuzz=2)
    assert first == again
    a = make_inputs(OP, "float32", first[1]).values["x"]
    b = make_inputs(OP, "float32", again[1]).values["x"]
    c = make_inputs(OP, "float32", other[1]).values["x"]
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def _values(dist: str, dtype: str) -> Any:
    case = next(
        c
        for c in plan_cases(OP, dtype, seed=3, extended=False, all_distributions=True, fuzz=0)
        if c.distribution == dist and dict(c.sizes)["cols"] == 1025
    )
    return make_inputs(OP, dtype, case)


def test_value_distributions_produce_what_they_promise() -> None:
    denormal = _values("denormal", "float32").values["x"]
    tiny = np.finfo(np.float32).smallest_normal
    assert (np.abs(denormal) < tiny).all() and (denormal != 0).any()
    zeros = _values("zeros", "float32").values["x"]
    assert (zeros == 0).all() and np.signbit(zeros).any() and (~np.signbit(zeros)).any()
    assert np.isinf(_values("inf", "float32").values["x"]).any()
    assert np.isnan(_values("nan", "float16").values["x"]).any()


def test_reference_sees_exactly_the_stored_values_widened() -> None:
    inputs = _values("denormal", "float16")
    assert inputs.values["x"].dtype == np.float16
    assert inputs.reference["x"].dtype == np.float64
    assert np.array_equal(inputs.values["x"].astype(np.float64), inputs.reference["x"])
    assert inputs.reference["a"] in (2.0, -3.0)


def test_integer_inputs_are_integers() -> None:
    inputs = _values("normal", "int32")
    assert inputs.values["x"].dtype == np.int32
    assert inputs.reference["x"].dtype == np.int64


def test_bf16_round_keeps_8_bits_of_mantissa_ties_to_even() -> None:
    x = np.array([1.0, 1.0 + 2**-8, 1.0 + 3 * 2**-8, -2.5, np.inf, np.nan], dtype=np.float32)
    out = bf16_round(x)
    assert out[0] == 1.0
    assert out[1] == 1.0  # a tie rounds to the even neighbour
    assert out[2] == 1.0 + 2**-6
    assert out[3] == -2.5
    assert np.isinf(out[4]) and np.isnan(out[5])
    assert (out.view(np.uint32) & 0xFFFF == 0)[:5].all()
    bf = _values("normal", "bfloat16").values["x"]
    assert np.array_equal(bf, bf16_round(bf))


SOFTMAX = Op(
    name="softmax",
    reference=_ref,
    inputs=(Tensor(name="x", dims=("rows", "cols")),),
    shapes=({"rows": 2, "cols": 100},),
    crosses={"cols": (32768, 65536)},
    impls=(Impl(kind="native", fn=_ref),),
)


def _sizes(extended: bool) -> list[dict[str, int]]:
    cases = plan_cases(
        SOFTMAX, "float32", seed=0, extended=extended, all_distributions=False, fuzz=0
    )
    return [dict(c.sizes) for c in cases]


def test_a_quick_run_samples_one_case_past_each_declared_threshold() -> None:
    assert _sizes(False) == [
        {"rows": 2, "cols": 100},
        {"rows": 2, "cols": 32769},
        {"rows": 2, "cols": 65537},
    ]


def test_a_thorough_run_takes_each_threshold_and_one_past_it() -> None:
    cols = [s["cols"] for s in _sizes(True)]
    assert cols == [100, 32768, 32769, 65536, 65537]


def test_crosses_names_a_dimension_of_the_shapes() -> None:
    with pytest.raises(DeclarationError, match="unknown dimension in crosses 'width'"):
        dataclasses.replace(SOFTMAX, crosses={"width": (10,)})
    with pytest.raises(DeclarationError, match="not a tuple of sizes"):
        dataclasses.replace(SOFTMAX, crosses={"cols": (0,)})
