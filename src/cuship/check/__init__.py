"""Kernel checks on CPU-only CI and on GPUs: declare ops, plan cases, run them, compare, report.

Check modules import their declarations from here::

    from cuship.check import Impl, Op, Scalar, Tensor
"""

from __future__ import annotations

from cuship.check.declare.registry import Impl, Invariant, Op, Scalar, Tensor, edge_sizes

__all__ = ["Impl", "Invariant", "Op", "Scalar", "Tensor", "edge_sizes"]
