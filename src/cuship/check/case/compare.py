"""Closeness of a kernel's output to the float64 reference: |out - ref| <= atol + rtol * |ref|,
or ``rtol * max(|ref|, |scale|)`` where the op declares a scale (see :class:`cuship.check.Op`).

Defaults per dtype are torch.testing.assert_close's. NaN matches only NaN, an infinity only the
same infinity; a NaN where the reference has a number always fails (that is how unwritten,
NaN-poisoned output elements show up).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "DEFAULT_TOLERANCES",
    "Comparison",
    "Tolerance",
    "compare",
    "output_label",
    "tolerance_for",
]

# (rtol, atol) per dtype, as torch.testing.assert_close has them (torch/testing/_comparison.py).
DEFAULT_TOLERANCES: Mapping[str, tuple[float, float]] = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "int32": (0.0, 0.0),
    "int64": (0.0, 0.0),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Tolerance:
    rtol: float
    atol: float


def tolerance_for(
    dtype: str,
    op_overrides: Mapping[str, tuple[float, float]] | None = None,
    *,
    rtol: float | None = None,
    atol: float | None = None,
) -> Tolerance:
    """The tolerance of a case: config (``rtol``/``atol``) over the op's table over the defaults."""
    base = (op_overrides or {}).get(dtype) or DEFAULT_TOLERANCES.get(dtype, (0.0, 0.0))
    return Tolerance(
        rtol=base[0] if rtol is None else rtol,
        atol=base[1] if atol is None else atol,
    )


def output_label(name: str) -> str:
    """How a compared result is named in reports: ``output 'y'``, or ``grad of x`` as is."""
    return name if name.startswith("grad of ") else f"output {name!r}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Comparison:
    """Error figures of one output against its reference."""

    total: int
    mismatches: int
    max_abs: float
    max_rel: float
    worst_index: tuple[int, ...] | None
    worst_actual: float | None
    worst_expected: float | None
    message: str | None = None

    @property
    def ok(self) -> bool:
        return self.mismatches == 0 and self.message is None


def _as_float64(value: Any) -> np.ndarray[Any, np.dtype[np.float64]]:
    arr = np.asarray(value)
    if arr.dtype == object:
        raise TypeError(f"not numeric: {type(value).__name__}")
    return arr.astype(np.float64)


def _shape_mismatch(actual: np.ndarray[Any, Any], expected: np.ndarray[Any, Any]) -> Comparison:
    return Comparison(
        total=int(expected.size),
        mismatches=max(int(expected.size), 1),
        max_abs=float("inf"),
        max_rel=float("inf"),
        worst_index=None,
        worst_actual=None,
        worst_expected=None,
        message=f"shape {actual.shape} differs from the reference's {expected.shape}",
    )


def compare(actual: Any, expected: Any, tol: Tolerance, *, scale: Any = None) -> Comparison:
    """Compare ``actual`` with the float64 ``expected`` elementwise under ``tol``; ``scale``
    (broadcast to the reference's shape) raises the yardstick ``rtol`` multiplies where it is
    larger than ``|expected|``, and relative errors are taken against the same yardstick."""
    a = _as_float64(actual)
    e = _as_float64(expected)
    if a.shape != e.shape:
        return _shape_mismatch(a, e)
    size = np.abs(e)
    if scale is not None:
        with np.errstate(invalid="ignore"):
            size = np.fmax(size, np.abs(np.broadcast_to(_as_float64(scale), e.shape)))
    if e.size == 0:
        return Comparison(
            total=0,
            mismatches=0,
            max_abs=0.0,
            max_rel=0.0,
            worst_index=None,
            worst_actual=None,
            worst_expected=None,
        )
    finite = np.isfinite(a) & np.isfinite(e)
    same_special = (np.isnan(a) & np.isnan(e)) | (np.isinf(a) & np.isinf(e) & (a == e))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        diff = np.where(finite, np.abs(a - e), 0.0)
        bound = tol.atol + tol.rtol * size
        close = (finite & (diff <= bound)) | same_special
        rel = np.where(finite & (diff > 0), diff / size, 0.0)
        ratio = np.where(finite, diff / np.where(bound > 0, bound, 1e-300), np.inf)
    mismatches = int((~close).sum())
    nonfinite_bad = bool((~close & ~finite).any())
    flat = int(np.argmax(np.where(close, -1.0, ratio))) if mismatches else int(np.argmax(diff))
    index = tuple(int(i) for i in np.unravel_index(flat, e.shape))
    return Comparison(
        total=int(e.size),
        mismatches=mismatches,
        max_abs=float("inf") if nonfinite_bad else float(diff.max()),
        max_rel=float("inf") if nonfinite_bad else float(np.nan_to_num(rel, nan=np.inf).max()),
        worst_index=index,
        worst_actual=float(a[index]),
        worst_expected=float(e[index]),
    )
