"""``a and b``, ``a or b`` and ``not a`` in interpreted kernels, as compiled Triton reads them.

The interpreter runs a kernel as Python, so ``(offs < n) and (offs >= lo)`` asks the first mask
for its truth (a block is always true there) and returns the second mask: the first condition is
dropped without a word. Triton's code generator evaluates the operands in order, lets a
compile-time value (a Python or constexpr bool) short-circuit, and combines the tensors with
``logical_and``/``logical_or``; ``not`` of a tensor is its ``__not__``. :class:`BoolOpRewriter`
turns each ``and``/``or``/``not`` of a kernel's source into a call of :func:`bool_op` /
:func:`bool_not`, which do that, in a pass before the interpreter's own AST transformer
(:class:`Chained`), whose rewrites (comparison chains, assignments) still apply. Used by
:mod:`cuship.check.interpret.adapt` only.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

__all__ = ["HELPERS", "BoolOpRewriter", "Chained", "bool_not", "bool_op"]

_OP = "_cuship_bool_op"
_NOT = "_cuship_bool_not"


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


HELPERS: dict[str, Callable[..., Any]] = {_OP: bool_op, _NOT: bool_not}


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


class Chained:
    """The boolean rewrites, then the interpreter's own transformer (``then``): a separate pass,
    because Triton 3.5's transformer does not descend into an assignment's value."""

    def __init__(self, then: Any) -> None:
        self.then = then

    def visit(self, tree: ast.AST) -> Any:
        return self.then.visit(BoolOpRewriter().visit(tree))
