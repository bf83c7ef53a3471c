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

- A kernel argument that is not a torch tensor but has ``data_ptr()`` and ``dtype`` (a
  library's strided buffer over a tensor's memory): compiled Triton takes the pointer; the
  interpreter copies each argument's torch storage to the host and back, and fails on it. On the
  CPU its memory is the host's already: it is passed as it is.

Used by :mod:`cuship.check.interpret.adapt` only.
"""

from __future__ import annotations

import sys
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


def _foreign(value: Any) -> bool:
    """A pointer argument the interpreter cannot copy (``data_ptr()``, not a torch tensor), in
    host memory."""
    if not hasattr(value, "data_ptr"):
        return False
    from triton.runtime.jit import TensorWrapper

    torch = sys.modules.get("torch")
    if isinstance(value, TensorWrapper) or (torch is not None and isinstance(value, torch.Tensor)):
        return False
    return getattr(getattr(value, "device", None), "type", "cpu") == "cpu"


def _without_foreign(args: Any, kwargs: Any) -> tuple[list[Any], dict[str, Any]]:
    return (
        [None if _foreign(a) else a for a in args],
        {k: None if _foreign(v) else v for k, v in kwargs.items()},
    )


def _host_arguments(original: Callable[..., Any]) -> Callable[..., Any]:
    def init_args_hst(self: Any, args_dev: Any, kwargs: Any) -> Any:
        args_hst, kwargs_hst = original(self, *_without_foreign(args_dev, kwargs))
        args_hst = [a if _foreign(a) else h for a, h in zip(args_dev, args_hst, strict=True)]
        kwargs_hst = {k: v if _foreign(v) else kwargs_hst[k] for k, v in kwargs.items()}
        return args_hst, kwargs_hst

    return init_args_hst


def _restored_arguments(original: Callable[..., Any]) -> Callable[..., Any]:
    def restore_args_dev(self: Any, args_dev: Any, args_hst: Any, kwargs: Any, hst: Any) -> Any:
        dev, kw_dev = _without_foreign(args_dev, kwargs)
        host, kw_host = _without_foreign(args_hst, hst)
        return original(self, dev, host, kw_dev, kw_host)

    return restore_args_dev


def apply(interpreter: ModuleType, patches: Patches) -> None:
    """Scalar indices, ``triton.language`` through ``triton``, dtypes' ``.value``, pointer
    arguments that are not torch tensors."""
    import triton.language as tl

    executor = interpreter.GridExecutor
    patches.attr(executor, "_init_args_hst", _host_arguments(executor._init_args_hst))
    patches.attr(executor, "_restore_args_dev", _restored_arguments(executor._restore_args_dev))
    patches.attr(tl.tensor, "__index__", _scalar_index)
    original = interpreter._patch_lang_tensor
    patches.attr(interpreter, "_patch_lang_tensor", _patch_lang_tensor(original, tl))
    patches.attr(interpreter, "_patch_lang", _patch_lang(interpreter._patch_lang, tl))
    if not hasattr(tl.dtype, "value"):
        patches.attr(tl.dtype, "value", property(_dtype_value))
