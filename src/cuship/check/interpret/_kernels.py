"""Jit functions that look like compiled Triton's to the libraries that wrap them, and autotuning
without a GPU to time on.

Under ``TRITON_INTERPRET=1`` ``triton.jit`` returns an ``InterpretedFunction``; libraries written
against ``JITFunction`` break on it: a ``libentry``-style wrapper walks ``.fn`` until it finds a
``JITFunction`` and reads its ``params`` and ``signature``, code generators assert
``isinstance(fn, JITFunction)`` and read ``src``, ``cache_key`` and ``__globals__``, and a
launcher keeps what ``run`` returned (a compiled kernel) to launch it again with
``kernel[grid](*args)``. :func:`jit_class` is an ``InterpretedFunction`` that is also a
``JITFunction`` (built with both constructors, interpreting all the same), whose ``run`` returns
a :class:`Compiled` stand-in that launches the interpreted kernel.

An ``Autotuner`` with several configs times each on the GPU's driver ("0 active drivers" in the
interpreter). Every config computes the same result on a GPU, so :func:`pick_timings` chooses
one without timing: a stable hash of the launch's shapes, dtypes and scalar arguments picks it,
so different cases exercise different configs and ``--case N`` runs the same one again.
Used by :mod:`cuship.check.interpret.adapt` only.
"""

from __future__ import annotations

import contextlib
import inspect
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["Compiled", "hashed_references", "jit_class", "pick_timings"]

_CLASSES: dict[type, type] = {}


class Compiled:
    """What compiled Triton's ``run`` returns, for the interpreter: ``kernel[grid](*args)``
    launches the kernel again. ``args`` are all of the kernel's parameters, or only those that
    are not constexpr (newer Triton launches take those); the constexprs then come from the run
    that made this stand-in."""

    def __init__(self, function: Any, constants: Mapping[str, Any]) -> None:
        self.function = function
        self.constants = dict(constants)

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        def launch(*args: Any, **kwargs: Any) -> Any:
            names = list(self.function.arg_names)
            if len(args) < len(names):
                runtime = [n for n in names if n not in self.constants]
                bound = dict(zip(runtime, args, strict=False))
                values = {n: bound[n] if n in bound else self.constants.get(n) for n in names}
                return self.function[grid](**values, **kwargs)
            return self.function[grid](*args, **kwargs)

        return launch


def _constants(function: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The constexpr parameters' values of one launch (given, or their defaults)."""
    found = {}
    names = list(function.arg_names)
    given = {**dict(zip(names, args, strict=False)), **kwargs}
    for param in getattr(function, "params", ()):  # none without source
        if not param.is_constexpr:
            continue
        if param.name in given:
            found[param.name] = given[param.name]
        elif param.default is not inspect.Parameter.empty:
            found[param.name] = param.default
    return found


def _make(interpreted: Any, jit_function: Any) -> type:
    def __init__(self: Any, fn: Callable[..., Any], **kwargs: Any) -> None:
        # No source to read (a function made by exec): interpreted all the same.
        with contextlib.suppress(OSError, TypeError, ValueError):
            jit_function.__init__(self, fn, **kwargs)
        interpreted.__init__(self, fn, **kwargs)
        launch = self.run

        def run(*args: Any, **run_kwargs: Any) -> Compiled:
            launch(*args, **run_kwargs)
            options = {k: v for k, v in run_kwargs.items() if k not in ("grid", "warmup")}
            return Compiled(self, _constants(self, args, options))

        self.run = run

    def name(self: Any) -> str:
        return str(self.fn.__name__)

    namespace = {
        "__init__": __init__,
        # JITFunction's constructor sets __name__; the interpreter's class reads it off fn.
        "__name__": property(name, lambda self, value: None),
        "__module__": __name__,
        "__doc__": "An interpreted jit function that is also a JITFunction (see cuship).",
    }
    return type("InterpretedJITFunction", (interpreted, jit_function), namespace)


def jit_class(interpreted: type, jit_function: type) -> type:
    """The interpreter's function class made a ``JITFunction`` too (one class per pair)."""
    if interpreted not in _CLASSES:
        _CLASSES[interpreted] = _make(interpreted, jit_function)
    return _CLASSES[interpreted]


def _fingerprint(value: Any) -> str:
    shape = getattr(value, "shape", None)
    if shape is not None and hasattr(value, "dtype"):
        return f"{tuple(shape)}:{value.dtype}"
    if isinstance(value, bool | int | float | str) or value is None:
        return repr(value)
    return type(value).__name__


def pick_timings(
    tuner: Any, args: Sequence[Any], config: Any, meta: Mapping[str, Any]
) -> list[float]:
    """The "timings" of ``config`` for one launch: 0 for the config the launch's stable hash
    picks, else the config's distance after it in the tuner's list (so ``min`` takes the pick)."""
    configs = list(tuner.configs)
    names = list(getattr(tuner, "arg_names", ()))
    described = [f"{n}={_fingerprint(v)}" for n, v in zip(names, args, strict=False)]
    described += [
        f"{k}={_fingerprint(v)}" for k, v in sorted(meta.items()) if k not in ("grid", "warmup")
    ]
    pick = zlib.crc32("|".join(described).encode()) % len(configs)
    index = next((i for i, c in enumerate(configs) if c is config), configs.index(config))
    distance = float((index - pick) % len(configs))
    return [distance, distance, distance]


def hashed_references(original: Callable[..., Any], plain: type) -> Callable[..., Any]:
    """``DependenciesFinder.record_reference`` (what ``cache_key`` hashes) taking an interpreted
    function made before the adaptation (Triton's own ``tl.zeros``, ``tl.sigmoid``) as compiled
    Triton takes a jit function: hashed by its code, not refused as an "unsupported function"."""

    def record_reference(self: Any, val: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(val, plain) and not hasattr(val, "params"):
            fn: Any = getattr(val, "fn", None)
            self.hasher.update(f"{fn.__qualname__}:{fn.__code__.co_code.hex()}".encode())
            return None
        return original(self, val, *args, **kwargs)

    return record_reference
