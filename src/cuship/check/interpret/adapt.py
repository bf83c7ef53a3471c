"""The Triton interpreter as real kernels need it: a scoped adaptation, undone after each case.

Triton's interpreter (TRITON_INTERPRET=1, checked against Triton 3.5 to 3.9) differs from
compiled Triton in ways kernels from real libraries hit before any comparison; the adaptation
gives them the compiler's meaning:

- a float kernel argument stays a Python float, so ``eps.to(tl.float32)`` fails; compiled Triton
  passes it as an fp32 scalar, and so does the adaptation;
- libdevice (``tl.extra.libdevice``, ``triton.language.extra.cuda.libdevice``) is a set of stubs
  returning None; the adaptation computes the elementwise math functions with NumPy in the
  argument's dtype (the ``_rz/_rd/_ru`` rounding variants round to nearest, within one ulp);
- bfloat16 values are held as their uint16 bits and arithmetic, ``tl.dot`` and reductions run on
  the bits; the adaptation computes them in float32 and rounds to bfloat16 (nearest even), and
  makes bf16 constants (``0.5 * x``) where Triton 3.5 cannot (:mod:`._bf16`);
- ``a and b``, ``a or b`` and ``not a`` on tensors are logical operations, not Python's
  (:mod:`._rewrite`);
- a grid's dimensions past the third are ignored, a scalar tensor is an index under NumPy 2.4,
  a module that imports only ``triton`` reaches ``triton.language``, a dtype passed as a
  constexpr has ``.value`` (:mod:`._launch`);
- ``triton.jit`` makes functions that are ``JITFunction`` s too (``params``, ``src``,
  ``cache_key``, ``__globals__``, ``run`` returning a launchable kernel), and an autotuner with
  several configs picks one without a GPU to time it (:mod:`._kernels`).

:func:`adapted` applies it while cuship runs one case on the ``triton-interpret`` engine (and
while a worker of that engine imports the check modules and the project's packages, whose
decorators run at import) and puts every changed attribute back on exit; nothing is patched at
import and nothing for other engines. Functions the interpreter rewrote under the adaptation are
cached apart from those it rewrote without it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, MutableMapping
from types import ModuleType
from typing import Any

import numpy as np

from cuship.check.interpret import _kernels, _launch, _rewrite
from cuship.check.interpret._libdevice import emulation
from cuship.check.interpret._patches import Patches

__all__ = ["LIBDEVICE_MODULES", "adapted"]

LIBDEVICE_MODULES = (
    "triton.language.extra.libdevice",
    "triton.language.extra.cuda.libdevice",
    "triton.language.extra.hip.libdevice",
)

# Kernels the interpreter rewrote under the adaptation (its boolean rewrites in them), kept
# apart from its own cache of plain rewrites, across cases.
_REWRITTEN: dict[Callable[..., Any], Callable[..., Any]] = {}


@contextlib.contextmanager
def adapted() -> Iterator[None]:
    """Run Triton kernels in the interpreter with the compiler's meaning (see the module)."""
    import importlib

    interpreter = importlib.import_module("triton.runtime.interpreter")
    patches = Patches()
    try:
        _float_arguments(interpreter, patches)
        _libdevice_modules(patches)
        plain = _plain_class(interpreter)
        _launches(interpreter, plain, patches)
        _bf16(interpreter, patches)
        _launch.apply(interpreter, patches)
        _rewrites(interpreter, plain, patches)
        _jit_functions(interpreter, plain, patches)
        _autotune(patches)
        yield
    finally:
        patches.undo()


def _plain_class(interpreter: ModuleType) -> type:
    """The interpreter's own function class (not the adaptation's subclass of it)."""
    cls: type = interpreter.InterpretedFunction
    while cls.__module__ == _kernels.__name__:
        cls = cls.__bases__[0]
    return cls


def _float_arguments(interpreter: ModuleType, patches: Patches) -> None:
    import triton.language as tl

    original = interpreter._implicit_cvt

    def implicit_cvt(arg: Any) -> Any:
        if isinstance(arg, float):
            handle = interpreter.TensorHandle(np.array([arg], dtype=np.float32), tl.float32)
            return tl.tensor(handle, tl.float32)
        return original(arg)

    patches.attr(interpreter, "_implicit_cvt", implicit_cvt)


def _libdevice_modules(patches: Patches) -> None:
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


def _launches(interpreter: ModuleType, plain: type, patches: Patches) -> None:
    """At each launch: the grid cut to three dimensions, and the names a kernel module bound
    with ``from ... libdevice import rsqrt`` (the stubs) rebound in the kernel's globals and
    those of the jit functions it uses."""
    executor = interpreter.GridExecutor
    original = executor.__call__

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        launch = Patches()
        try:
            launch.attr(self, "grid", _launch.three_dimensions(self.grid))
            _rebind(self.fn.__globals__, plain, launch, set())
            return original(self, *args, **kwargs)
        finally:
            launch.undo()

    patches.attr(executor, "__call__", call)


def _rebind(
    namespace: MutableMapping[str, Any], jit_type: type, patches: Patches, seen: set[int]
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


def _bf16(interpreter: ModuleType, patches: Patches) -> None:
    from cuship.check.interpret import _bf16

    builder = type(interpreter.interpreter_builder)
    for name, wrap in _bf16.BUILDER_WRAPPERS.items():
        patches.attr(builder, name, wrap(getattr(builder, name), interpreter))
    if not hasattr(builder, "get_bf16"):
        patches.attr(builder, "get_bf16", _bf16.get_bf16)
    for name, reduce_wrap in _bf16.REDUCE_WRAPPERS.items():
        reduce_ops = interpreter.ReduceOps
        patches.attr(reduce_ops, name, reduce_wrap(getattr(reduce_ops, name)))


def _rewrites(interpreter: ModuleType, plain: type, patches: Patches) -> None:
    """The interpreter's source rewriting with ``and``/``or``/``not`` as the compiler reads them;
    the helpers it calls go into the kernel module's globals, as the interpreter's own do."""
    rewriter = interpreter.FunctionRewriter
    own = rewriter.ast_transformer
    while isinstance(own, _rewrite.Chained):
        own = own.then
    patches.attr(rewriter, "ast_transformer", _rewrite.Chained(own))
    compile_and_exec = rewriter._compile_and_exec

    def with_helpers(self: Any, transformed: Any) -> Any:
        for name, helper in _rewrite.HELPERS.items():
            self.fn.__globals__.setdefault(name, helper)
        return compile_and_exec(self, transformed)

    patches.attr(rewriter, "_compile_and_exec", with_helpers)
    patches.attr(plain, "rewritten_fn", _REWRITTEN)


def _jit_functions(interpreter: ModuleType, plain: type, patches: Patches) -> None:
    from triton.runtime.jit import DependenciesFinder, JITFunction

    patches.attr(interpreter, "InterpretedFunction", _kernels.jit_class(plain, JITFunction))
    record = DependenciesFinder.record_reference
    patches.attr(DependenciesFinder, "record_reference", _kernels.hashed_references(record, plain))


def _autotune(patches: Patches) -> None:
    from triton.runtime.autotuner import Autotuner

    def bench(self: Any, *args: Any, config: Any, **meta: Any) -> list[float]:
        return _kernels.pick_timings(self, args, config, meta)

    patches.attr(Autotuner, "_bench", bench)
