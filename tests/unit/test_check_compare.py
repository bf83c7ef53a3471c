"""Closeness rules of `cuship check`: torch's per-dtype defaults, NaN/inf handling, error figures."""

from __future__ import annotations

import numpy as np
import pytest

from cuship.check.case.compare import DEFAULT_TOLERANCES, Tolerance, compare, tolerance_for

F32 = Tolerance(rtol=1.3e-6, atol=1e-5)


def test_defaults_are_torch_testing_assert_close_defaults() -> None:
    assert DEFAULT_TOLERANCES["float16"] == (1e-3, 1e-5)
    assert DEFAULT_TOLERANCES["bfloat16"] == (1.6e-2, 1e-5)
    assert DEFAULT_TOLERANCES["float32"] == (1.3e-6, 1e-5)
    assert DEFAULT_TOLERANCES["float64"] == (1e-7, 1e-7)
    assert DEFAULT_TOLERANCES["int32"] == (0.0, 0.0)


def test_overrides_win_in_order_config_then_op_then_default() -> None:
    assert tolerance_for("float32") == Tolerance(rtol=1.3e-6, atol=1e-5)
    op_table = {"float32": (1e-4, 1e-4)}
    assert tolerance_for("float32", op_table) == Tolerance(rtol=1e-4, atol=1e-4)
    assert tolerance_for("float32", op_table, rtol=0.5) == Tolerance(rtol=0.5, atol=1e-4)


def test_within_bound_passes_and_reports_figures() -> None:
    ref = np.array([1.0, 2.0, -4.0])
    out = ref + np.array([0.0, 5e-6, -1e-6])
    result = compare(out, ref, F32)
    assert result.ok
    assert result.max_abs == pytest.approx(5e-6)
    assert result.max_rel == pytest.approx(2.5e-6)
    assert result.worst_index == (1,)


def test_mismatch_records_count_and_worst_element() -> None:
    ref = np.zeros((2, 3))
    out = ref.copy()
    out[0, 1] = 1e-3
    out[1, 2] = 5e-2
    result = compare(out, ref, F32)
    assert not result.ok
    assert result.mismatches == 2
    assert result.worst_index == (1, 2)
    assert result.worst_actual == pytest.approx(5e-2)
    assert result.worst_expected == 0.0


def test_nan_where_reference_has_a_number_always_fails() -> None:
    ref = np.array([1.0, 2.0, 3.0])
    out = np.array([1.0, np.nan, 3.0])  # an unwritten, NaN-poisoned element
    result = compare(out, ref, Tolerance(rtol=1e9, atol=1e9))
    assert result.mismatches == 1
    assert result.worst_index == (1,)
    assert result.max_abs == float("inf")


def test_matching_nan_and_infinities_pass_but_wrong_infinity_fails() -> None:
    ref = np.array([np.nan, np.inf, -np.inf])
    assert compare(ref.copy(), ref, F32).ok
    wrong = np.array([np.nan, -np.inf, -np.inf])
    assert compare(wrong, ref, F32).mismatches == 1
    finite_for_inf = np.array([np.nan, 1e308, -np.inf])
    assert compare(finite_for_inf, ref, F32).mismatches == 1


def test_number_where_reference_is_nan_fails() -> None:
    assert compare(np.array([0.0]), np.array([np.nan]), F32).mismatches == 1


def test_integers_compare_exactly() -> None:
    exact = Tolerance(rtol=0.0, atol=0.0)
    assert compare(np.int64(41), np.int64(41), exact).ok
    result = compare(np.int64(42), np.int64(41), exact)
    assert result.mismatches == 1
    assert result.max_abs == 1.0


def test_shape_mismatch_fails_with_a_message() -> None:
    result = compare(np.zeros(3), np.zeros(4), F32)
    assert not result.ok
    assert result.message is not None and "(3,)" in result.message


def test_empty_outputs_are_equal() -> None:
    assert compare(np.zeros((0, 8)), np.zeros((0, 8)), F32).ok


def test_a_scale_holds_cancelled_terms_to_their_own_size() -> None:
    # float32 saxpy without a fused multiply-add: 2.5 * x + y with x, y near 1e4 that cancel
    a = np.float32(2.5)
    x = np.array([9999.123, -4000.5, 1.0], dtype=np.float32)
    y = np.array([-24991.54, 10007.5, 2.0], dtype=np.float32)
    out = (a * x).astype(np.float32) + y  # two roundings
    ref = 2.5 * x.astype(np.float64) + y.astype(np.float64)
    scale = np.abs(2.5 * x.astype(np.float64)) + np.abs(y.astype(np.float64))
    assert not compare(out, ref, F32).ok  # |ref| alone calls the rounding of the terms a bug
    held = compare(out, ref, F32, scale=scale)
    assert held.ok
    assert held.max_rel < 1.3e-6
    wrong = out.copy()
    wrong[0] += np.float32(1.0)  # a real error (a term off by 1): past rtol of the terms
    assert compare(wrong, ref, F32, scale=scale).mismatches == 1


def test_a_scalar_scale_broadcasts_and_nan_in_the_scale_leaves_the_reference_yardstick() -> None:
    ref = np.array([1.0, 2.0])
    out = ref + 1e-4
    assert compare(out, ref, F32, scale=1e3).ok
    assert not compare(out, ref, F32, scale=np.array([np.nan, np.nan])).ok
