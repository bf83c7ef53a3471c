"""The Triton interpreter as real kernels need it: a scoped adaptation, undone after each case.

Triton's interpreter (TRITON_INTERPRET=1, checked against Triton 3.x) differs from compiled Triton
in three ways kernels from real libraries hit before any comparison:

- a float kernel argument stays a Python float, so ``eps.to(tl.float32)`` fails; compiled Triton
  passes it as an fp32 scalar, and so does the adaptation;
- libdevice (``tl.extra.libdevice``, ``triton.language.extra.cuda.libdevice``) is a set of stubs
  returning None; the adaptation computes the elementwise math functions with NumPy in the
  argument's dtype (the ``_rz/_rd/_ru`` rounding variants round to nearest, within one ulp);
- bfloat16 values are held as their uint16 bits and arithmetic runs on the bits; the adaptation
  computes bf16 operations in float32 and rounds the result to bfloat16 (nearest even), which is
  what a GPU does for ops without a native bf16 unit.

:func:`adapted` applies it while cuship runs one case on the ``triton-interpret`` engine and puts
every changed attribute back on exit; nothing is patched at import and nothing for other engines.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, MutableMapping
from types import ModuleType
from typing import Any

import numpy as np

from cuship.check.interpret._libdevice import emulation

__all__ = ["LIBDEVICE_MODULES", "adapted"]

LIBDEVICE_MODULES = (
    "triton.language.extra.libdevice",
    "triton.language.extra.cuda.libdevice",
    "triton.language.extra.hip.libdevice",
)


class _Patches:
    """Attributes and dict entries set for a while; :meth:`undo` restores them in reverse."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []

    def attr(self, obj: Any, name: str, value: Any) -> None:
        missing = object()
        old = getattr(obj, name, missing)
        setattr(obj, name, value)
        self._undo.append(
            (lambda: delattr(obj, name)) if old is missing else (lambda: setattr(obj, name, old))
        )

    def item(self, mapping: MutableMapping[str, Any], key: str, value: Any) -> None:
        old = mapping[key]
        mapping[key] = value
        self._undo.append(lambda: mapping.__setitem__(key, old))

    def undo(self) -> None:
        while self._undo:
            self._undo.pop()()


@contextlib.contextmanager
def adapted() -> Iterator[None]:
    """Run Triton kernels in the interpreter with float arguments, libdevice and bf16 adapted."""
    import importlib

    interpreter = importlib.import_module("triton.runtime.interpreter")
    patches = _Patches()
    try:
        _float_arguments(interpreter, patches)
        _libdevice_modules(patches)
        _libdevice_globals(interpreter, patches)
        _bf16(interpreter, patches)
        yield
    finally:
        patches.undo()


def _float_arguments(interpreter: ModuleType, patches: _Patches) -> None:
    import triton.language as tl

    original = interpreter._implicit_cvt

    def implicit_cvt(arg: Any) -> Any:
        if isinstance(arg, float):
            handle = interpreter.TensorHandle(np.array([arg], dtype=np.float32), tl.float32)
            return tl.tensor(handle, tl.float32)
        return original(arg)

    patches.attr(interpreter, "_implicit_cvt", implicit_cvt)


def _libdevice_modules(patches: _Patches) -> None:
    import importlib

    for module_name in LIBDEVICE_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        for name, value in list(vars(module).items()):
            if _is_libdevice(value):
                patches.attr(module, name, emulation(name))


def _is_libdevice(value: Any) -> bool:
    return callable(value) and getattr(value, "__module__", None) in LIBDEVICE_MODULES


def _libdevice_globals(interpreter: ModuleType, patches: _Patches) -> None:
    """Names a kernel module bound with ``from ... libdevice import rsqrt`` point at the stubs;
    at each launch, rebind them in the kernel's globals and those of the jit functions it uses."""
    executor = interpreter.GridExecutor
    original = executor.__call__

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        launch = _Patches()
        try:
            _rebind(self.fn.__globals__, interpreter.InterpretedFunction, launch, set())
            return original(self, *args, **kwargs)
        finally:
            launch.undo()

    patches.attr(executor, "__call__", call)


def _rebind(
    namespace: MutableMapping[str, Any], jit_type: type, patches: _Patches, seen: set[int]
) -> None:
    if id(namespace) in seen:
        return
    seen.add(id(namespace))
    for key, value in list(namespace.items()):
        if _is_libdevice(value):
            patches.item(namespace, key, emulation(value.__name__))
        elif isinstance(value, jit_type):
            fn: Any = getattr(value, "fn", None)
            if fn is not None:
                _rebind(fn.__globals__, jit_type, patches, seen)


def _bf16(interpreter: ModuleType, patches: _Patches) -> None:
    from cuship.check.interpret import _bf16

    builder = type(interpreter.interpreter_builder)
    for name, wrap in _bf16.BUILDER_WRAPPERS.items():
        patches.attr(builder, name, wrap(getattr(builder, name), interpreter))
    for name, reduce_wrap in _bf16.REDUCE_WRAPPERS.items():
        reduce_ops = interpreter.ReduceOps
        patches.attr(reduce_ops, name, reduce_wrap(getattr(reduce_ops, name)))
