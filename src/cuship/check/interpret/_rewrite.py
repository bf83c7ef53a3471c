"""Kernel source as compiled Triton reads it: ``and``/``or``/``not`` on tensors, and loop
variables that are tensors.

The interpreter runs a kernel as Python, so ``(offs < n) and (offs >= lo)`` asks the first mask
for its truth (a block is always true there) and returns the second mask: the first condition is
dropped without a word. Triton's code generator evaluates the operands in order, lets a
compile-time value (a Python or constexpr bool) short-circuit, and combines the tensors with
``logical_and``/``logical_or``; ``not`` of a tensor is its ``__not__``. :class:`BoolOpRewriter`
turns each ``and``/``or``/``not`` of a kernel's source into a call of :func:`bool_op` /
:func:`bool_not`, which do that, in a pass before the interpreter's own AST transformer
(:class:`Chained`), whose rewrites (comparison chains, assignments) still apply.

The variable of a ``for i in range(n)`` (or ``tl.range``) loop is a tensor in compiled Triton
(``i.to(tl.int64)`` works, as FlagGems' and flash-linear-attention's kernels write); the
interpreter iterates Python's range and hands out ints. Such loops iterate :func:`tensor_range`
instead: the same values, as int32 scalars (int64 when a bound is). ``tl.static_range`` keeps
constants, as compiled. Used by :mod:`cuship.check.interpret.adapt` only.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["HELPERS", "BoolOpRewriter", "Chained", "bool_not", "bool_op", "tensor_range"]

_OP = "_cuship_bool_op"
_NOT = "_cuship_bool_not"
_RANGE = "_cuship_range"
_INT32 = (-(2**31), 2**31 - 1)


def _dynamic(value: Any) -> bool:
    """A value known only at run time (a Triton tensor), not a compile-time constant."""
    import triton.language as tl

    return isinstance(value, tl.tensor)


def bool_op(kind: str, first: Any, *rest: Callable[[], Any]) -> Any:
    """``first and rest[0]() and ...`` (``kind`` "and" or "or") with compiled Triton's meaning:
    operands evaluated in order, a constant decides on its own (False ends an ``and``, True an
    ``or``), tensors combined with ``logical_and``/``logical_or``."""
    tensors: list[Any] = []
    value = first
    for index in range(len(rest) + 1):
        if index:
            value = rest[index - 1]()
        if _dynamic(value):
            tensors.append(value)
        elif bool(value) is (kind == "or"):
            return value
    if not tensors:
        return value
    result = tensors.pop()
    while tensors:
        lhs = tensors.pop()
        result = lhs.logical_and(result) if kind == "and" else lhs.logical_or(result)
    return result


def bool_not(value: Any) -> Any:
    """``not value``: the tensor's ``__not__`` (as compiled), Python's ``not`` of a constant."""
    return value.__not__() if _dynamic(value) else not value


def _wide(value: Any) -> bool:
    """A loop bound that makes the loop variable int64: an int64 tensor, or an int past int32."""
    import triton.language as tl

    if isinstance(value, tl.tensor):
        return bool(value.dtype == tl.int64)
    return not _INT32[0] <= int(value) <= _INT32[1]


def tensor_range(*args: Any, step: Any = None, **options: Any) -> Iterator[Any]:
    """``range(*args)`` (``tl.range``'s options ignored, as the interpreter does) yielding
    scalar tensors: int32, or int64 when a bound is."""
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    bounds = [*args, *(() if step is None else (step,))]
    dtype, np_dtype = (tl.int64, np.int64) if any(map(_wide, bounds)) else (tl.int32, np.int32)
    for value in range(*(int(b) for b in bounds)):
        handle = interpreter.TensorHandle(np.array([value], dtype=np_dtype), dtype)
        yield tl.tensor(handle, dtype)


HELPERS: dict[str, Callable[..., Any]] = {_OP: bool_op, _NOT: bool_not, _RANGE: tensor_range}


def _call(name: str, args: list[ast.expr]) -> ast.Call:
    return ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=args, keywords=[])


def _thunk(body: ast.expr) -> ast.Lambda:
    empty = ast.arguments(
        posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]
    )
    return ast.Lambda(args=empty, body=body)


class BoolOpRewriter(ast.NodeTransformer):
    """Every ``and``/``or``/``not`` of a kernel's source into a call of the helpers."""

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        node = self.generic_visit(node)  # type: ignore[assignment]
        kind = "and" if isinstance(node.op, ast.And) else "or"
        first, *rest = node.values
        call = _call(_OP, [ast.Constant(value=kind), first, *(_thunk(v) for v in rest)])
        return ast.copy_location(call, node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        node = self.generic_visit(node)  # type: ignore[assignment]
        if not isinstance(node.op, ast.Not):
            return node
        return ast.copy_location(_call(_NOT, [node.operand]), node)

    def visit_For(self, node: ast.For) -> ast.AST:
        node = self.generic_visit(node)  # type: ignore[assignment]
        call = node.iter
        if isinstance(call, ast.Call) and _is_range(call.func):
            node.iter = ast.copy_location(
                ast.Call(
                    func=ast.Name(id=_RANGE, ctx=ast.Load()), args=call.args, keywords=call.keywords
                ),
                call,
            )
        return node


def _is_range(func: ast.expr) -> bool:
    """``range`` or ``<module>.range`` (``tl.range``), not ``static_range``."""
    if isinstance(func, ast.Name):
        return func.id == "range"
    return isinstance(func, ast.Attribute) and func.attr == "range"


class Chained:
    """The boolean rewrites, then the interpreter's own transformer (``then``): a separate pass,
    because Triton 3.5's transformer does not descend into an assignment's value."""

    def __init__(self, then: Any) -> None:
        self.then = then

    def visit(self, tree: ast.AST) -> Any:
        return self.then.visit(BoolOpRewriter().visit(tree))
