"""Gradients of an op that declares ``grads``: forward and backward against the float64 reference.

Each differentiable output gets a seeded upstream gradient (the same values, rounded to the
output's dtype, for the entry point and, widened, for the reference). The reference runs on
float64 torch tensors and ``torch.autograd.grad`` differentiates it; the entry point runs on the
case's tensors (an ``autograd.Function`` or any torch code) and is differentiated the same way.
Outputs are compared by name, gradients as ``grad of <input>``. Runs in a worker, with torch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuship.check.case.compare import Comparison, Tolerance, compare, tolerance_for
from cuship.check.declare.inputs import CaseSpec, Inputs, bf16_round, case_seed
from cuship.check.declare.registry import Op, Tensor

__all__ = [
    "Differentiated",
    "comparisons",
    "grad_label",
    "implementation",
    "output_names",
    "reference",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Differentiated:
    """Outputs and gradients of one run, as NumPy (floats widened to float64); a gradient is
    None where autograd found none (the input did not reach a differentiable output)."""

    outputs: Mapping[str, Any]
    grads: Mapping[str, Any]


def grad_label(name: str) -> str:
    """How the gradient of input ``name`` is named in results: ``grad of x``."""
    return f"grad of {name}"


def output_names(op: Op) -> tuple[str, ...]:
    return tuple(o.name for o in op.outputs) or ("return",)


def _named(op: Op, result: Any) -> dict[str, Any]:
    """A callable's result as outputs by name (one value, a tuple in ``outputs`` order, a dict)."""
    if isinstance(result, dict):
        return dict(result)
    values = tuple(result) if isinstance(result, tuple | list) else (result,)
    names = output_names(op)
    if len(values) != len(names):
        raise TypeError(
            f"op {op.name!r} declares {len(names)} outputs ({', '.join(names)}) and the call "
            f"returned {len(values)} values"
        )
    return dict(zip(names, values, strict=True))


def _output_dtype(op: Op, name: str, dtype: str) -> str:
    spec = next((o for o in op.outputs if o.name == name), None)
    return (spec.dtype if spec is not None else None) or dtype


def _upstream(op: Op, dtype: str, case: CaseSpec, shapes: Mapping[str, Any]) -> dict[str, Any]:
    """A seeded standard-normal upstream gradient per output, rounded to the output's dtype."""
    rng = np.random.default_rng(case_seed(case.seed, op.name + "/upstream", dtype, case.index))
    seeds: dict[str, Any] = {}
    for name, shape in shapes.items():
        values = rng.standard_normal(tuple(shape)).astype(np.float32)
        kind = _output_dtype(op, name, dtype)
        if kind == "bfloat16":
            values = bf16_round(values)
        elif kind in ("float16", "float64"):
            values = values.astype(kind)
        seeds[name] = values
    return seeds


def _torch_dtype(name: str) -> Any:
    import torch

    return getattr(torch, name)


def _gradients(
    op: Op, outs: Mapping[str, Any], leaves: Mapping[str, Any], seeds: Mapping[str, Any]
) -> dict[str, Any]:
    import torch

    names = list(seeds)
    got = torch.autograd.grad(
        [outs[n] for n in names],
        [leaves[g] for g in op.grads],
        grad_outputs=[seeds[n] for n in names],
        allow_unused=True,
    )
    return {g: None if t is None else _numpy(t) for g, t in zip(op.grads, got, strict=True)}


def _numpy(value: Any) -> Any:
    if hasattr(value, "detach"):
        tensor = value.detach().cpu()
        return (tensor.double() if tensor.is_floating_point() else tensor).numpy()
    arr = np.asarray(value)
    return arr.astype(np.float64) if arr.dtype.kind == "f" else arr


def reference(op: Op, inputs: Inputs, dtype: str, case: CaseSpec) -> tuple[Differentiated, Any]:
    """The reference's outputs and gradients in float64, and the upstream gradients it used
    (NumPy, in each output's dtype: give them to :func:`implementation`)."""
    import torch

    leaves = {
        name: torch.from_numpy(np.array(value)).requires_grad_(name in op.grads)
        if isinstance(value, np.ndarray)
        else value
        for name, value in inputs.reference.items()
    }
    extra = {"dtype": dtype} if op.reference_takes_dtype else {}
    outs = _named(op, op.reference(**leaves, **extra))
    for name, out in outs.items():
        if not isinstance(out, torch.Tensor):
            raise TypeError(
                f"op {op.name!r} declares grads, so its reference must compute with torch on the "
                f"float64 tensors it gets; output {name!r} is a {type(out).__name__}"
            )
    shapes = {n: tuple(o.shape) for n, o in outs.items() if o.requires_grad}
    seeds = _upstream(op, dtype, case, shapes)
    wide = {n: torch.from_numpy(v.astype(np.float64)) for n, v in seeds.items()}
    grads = _gradients(op, outs, leaves, wide) if wide else dict.fromkeys(op.grads)
    outputs = {n: _numpy(o) for n, o in outs.items()}
    return Differentiated(outputs=outputs, grads=grads), seeds


def _leaf(value: Any, dtype: str, device: str, wanted: bool) -> Any:
    if not isinstance(value, np.ndarray):
        return value
    import torch

    tensor = torch.from_numpy(np.ascontiguousarray(value))
    if dtype == "bfloat16":
        tensor = tensor.to(torch.bfloat16)
    return tensor.to(device).requires_grad_(wanted)


def implementation(
    op: Op,
    fn: Callable[..., Any],
    inputs: Inputs,
    seeds: Mapping[str, Any],
    *,
    dtype: str,
    device: str,
) -> Differentiated:
    """Run the entry point on the case's tensors (``dtype`` on ``device``), then its backward
    with the reference's upstream gradients."""
    import torch

    dtype_of = {s.name: s.dtype for s in op.inputs if isinstance(s, Tensor)}
    leaves = {
        name: _leaf(value, dtype_of.get(name) or dtype, device, name in op.grads)
        for name, value in inputs.values.items()
    }
    outs = _named(op, fn(**leaves))
    for name in seeds:
        out = outs.get(name)
        if not isinstance(out, torch.Tensor) or not out.requires_grad:
            raise TypeError(
                f"output {name!r} of the entry point is not differentiable (no grad_fn): return "
                "the result of the autograd.Function's apply()"
            )
    upstream = {
        n: torch.from_numpy(np.ascontiguousarray(v)).to(device=device, dtype=outs[n].dtype)
        for n, v in seeds.items()
    }
    grads = _gradients(op, outs, leaves, upstream) if upstream else dict.fromkeys(op.grads)
    return Differentiated(outputs={n: _numpy(o) for n, o in outs.items()}, grads=grads)


def _missing(what: str, size: int) -> Comparison:
    return Comparison(
        total=size,
        mismatches=max(size, 1),
        max_abs=float("inf"),
        max_rel=float("inf"),
        worst_index=None,
        worst_actual=None,
        worst_expected=None,
        message=what,
    )


def comparisons(
    op: Op, actual: Differentiated, expected: Differentiated, tol: Tolerance, dtype: str
) -> dict[str, Comparison]:
    """Each output, then each gradient (``grad_tolerances`` of the dtype, else ``tol``)."""
    found: dict[str, Comparison] = {}
    for name, want in expected.outputs.items():
        got = actual.outputs.get(name)
        found[name] = (
            _missing("the entry point returned no such output", np.size(want))
            if got is None
            else compare(got, want, tol)
        )
    grad_tol = tolerance_for(dtype, op.grad_tolerances) if dtype in op.grad_tolerances else tol
    for name in op.grads:
        want, got = expected.grads[name], actual.grads[name]
        size = int(np.size(want)) if want is not None else 0
        if got is None and want is not None:
            found[grad_label(name)] = _missing("the backward gives no gradient (None)", size)
            continue
        if want is None:
            want = np.zeros_like(got)
        found[grad_label(name)] = compare(got, want, grad_tol)
    return found
