"""What the compiler accepts at a launch and inside a kernel that the interpreter refuses.

- A grid of more than three dimensions (``(M, n, 1, 1)``, as a launcher that appends ones
  builds): compiled Triton reads the first three and ignores the rest; the interpreter asserts.
- ``range(n)`` over a runtime int: Triton 3.5's interpreter turns a scalar tensor into an index
  with ``int()`` of a one-element array, which NumPy 2.4 refuses ("only 0-dimensional arrays
  can be converted to Python scalars"); the index is the array's one element.
- A jit function in a module that imports only ``triton`` (``triton.language.sum(...)``): the
  interpreter asserts that ``triton.language`` is among its globals, the compiler resolves the
  attribute; the interpreter's patching of ``triton.language`` is the same either way.
- A dtype handed to a jit helper as a constexpr (``get_dtype_max(tl.float32)``, whose body reads
  ``dtype.value``): compiled Triton wraps it in ``tl.constexpr``, whose ``.value`` is the dtype;
  the interpreter passes the dtype, so ``.value`` must be the dtype itself.

Used by :mod:`cuship.check.interpret.adapt` only.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType, SimpleNamespace
from typing import Any

from cuship.check.interpret._patches import Patches

__all__ = ["apply", "three_dimensions"]


def three_dimensions(grid: Any) -> Any:
    """``grid`` (a tuple, or a function of the launch's arguments) cut to its first three
    dimensions, as compiled Triton reads it."""
    if callable(grid):
        return lambda meta: three_dimensions(grid(meta))
    if isinstance(grid, tuple | list) and len(grid) > 3:
        return tuple(grid[:3])
    return grid


def _scalar_index(tensor: Any) -> int:
    return int(tensor.handle.data.reshape(-1)[0])


def _patch_lang_tensor(original: Callable[..., Any], tl: ModuleType) -> Callable[..., Any]:
    def patch(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        tl.tensor.__index__ = _scalar_index
        return result

    return patch


def _patch_lang(original: Callable[..., Any], tl: ModuleType) -> Callable[..., Any]:
    def patch(fn: Any) -> Any:
        namespace = fn.__globals__
        if any(value is tl or value is tl.core for value in namespace.values()):
            return original(fn)
        return original(SimpleNamespace(__globals__={"triton.language": tl}))

    return patch


def _dtype_value(self: Any) -> Any:
    return self


def apply(interpreter: ModuleType, patches: Patches) -> None:
    """Scalar indices, ``triton.language`` through ``triton``, and dtypes' ``.value``."""
    import triton.language as tl

    patches.attr(tl.tensor, "__index__", _scalar_index)
    original = interpreter._patch_lang_tensor
    patches.attr(interpreter, "_patch_lang_tensor", _patch_lang_tensor(original, tl))
    patches.attr(interpreter, "_patch_lang", _patch_lang(interpreter._patch_lang, tl))
    if not hasattr(tl.dtype, "value"):
        patches.attr(tl.dtype, "value", property(_dtype_value))
