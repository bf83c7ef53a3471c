"""Declaring benchmarks: a case is a callable, a parameter grid, a setup and a work model.

A benchmark module (named in ``[bench] modules``) declares cases with :func:`case`::

    from cuship.bench import case

    @case(
        params={"n": [2**16, 2**20]},
        setup=lambda rng, n: {"x": rng.standard_normal(n), "y": rng.standard_normal(n)},
        bytes=lambda n: 3 * 4 * n,
        flops=lambda n: 2 * n,
    )
    def saxpy(x, y):
        return cuvecops.saxpy(2.0, x, y)

``setup(rng, **params)`` builds the inputs from a seeded ``numpy.random.Generator`` (never zeros)
and returns the keyword arguments of the timed call; without a setup the call gets the params.
Nothing here runs a case.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import itertools
import sys
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any, overload

from cuship.errors import ConfigError, InputError

__all__ = ["Case", "Point", "case", "case_key", "code_hash", "discover", "points"]

Params = Mapping[str, Any]
WorkFn = Callable[..., float]


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """One benchmark: ``fn(**setup(rng, **params))`` is the timed call."""

    name: str
    fn: Callable[..., Any]
    params: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    setup: Callable[..., Mapping[str, Any]] | None = None
    bytes: WorkFn | None = None
    flops: WorkFn | None = None
    ops: WorkFn | None = None
    description: str = ""
    module: str = ""

    def work(self, params: Params) -> dict[str, float | None]:
        """Bytes moved, flops and operations of one call at ``params`` (None when not modelled)."""
        return {
            name: None if fn is None else float(fn(**params))
            for name, fn in (("bytes", self.bytes), ("flops", self.flops), ("ops", self.ops))
        }

    def inputs(self, params: Params, seed: int) -> Mapping[str, Any]:
        """The keyword arguments of the timed call for ``params``, built from ``seed``."""
        if self.setup is None:
            return dict(params)
        import numpy as np

        return self.setup(np.random.default_rng(seed), **params)


@dataclass(frozen=True, slots=True, kw_only=True)
class Point:
    """A case at one parameter point; ``key`` is how the store and exports name it."""

    case: Case
    params: Mapping[str, Any]
    key: str


@overload
def case(fn: Callable[..., Any]) -> Case: ...


@overload
def case(
    fn: None = None,
    *,
    name: str | None = None,
    params: Mapping[str, Sequence[Any]] | None = None,
    setup: Callable[..., Mapping[str, Any]] | None = None,
    bytes: WorkFn | None = None,
    flops: WorkFn | None = None,
    ops: WorkFn | None = None,
) -> Callable[[Callable[..., Any]], Case]: ...


def case(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    params: Mapping[str, Sequence[Any]] | None = None,
    setup: Callable[..., Mapping[str, Any]] | None = None,
    bytes: WorkFn | None = None,
    flops: WorkFn | None = None,
    ops: WorkFn | None = None,
) -> Case | Callable[[Callable[..., Any]], Case]:
    """Declare a benchmark case; use as ``@case`` or ``@case(params=..., setup=..., bytes=...)``.

    Returns a :class:`Case` (the module keeps it under the function's name).
    """

    def wrap(func: Callable[..., Any]) -> Case:
        grid = {str(k): tuple(v) for k, v in (params or {}).items()}
        for key, values in grid.items():
            if not values:
                raise ValueError(f"case {func.__name__!r}: parameter {key!r} has no values")
        return Case(
            name=name or func.__name__,
            fn=func,
            params=grid,
            setup=setup,
            bytes=bytes,
            flops=flops,
            ops=ops,
            description=(inspect.getdoc(func) or "").split("\n", 1)[0],
        )

    return wrap if fn is None else wrap(fn)


def _value(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)


def case_key(name: str, params: Params) -> str:
    """``"<case>[<p1>=<v1>,<p2>=<v2>]"`` with params sorted by name; ``"<case>"`` without params."""
    if not params:
        return name
    inner = ",".join(f"{k}={_value(params[k])}" for k in sorted(params))
    return f"{name}[{inner}]"


def points(cases: Sequence[Case]) -> tuple[Point, ...]:
    """Every case at every point of its grid, in declaration order."""
    out = []
    for c in cases:
        names = list(c.params)
        for combo in itertools.product(*(c.params[n] for n in names)):
            values = dict(zip(names, combo, strict=True))
            out.append(Point(case=c, params=values, key=case_key(c.name, values)))
    return tuple(out)


def code_hash(c: Case) -> str:
    """First 12 hex of sha256 over the source of the case's callable, setup and work model."""
    digest = hashlib.sha256()
    for part in (c.fn, c.setup, c.bytes, c.flops, c.ops):
        if part is None:
            continue
        try:
            digest.update(inspect.getsource(part).encode())
        except (OSError, TypeError):
            digest.update(getattr(part, "__qualname__", repr(part)).encode())
    return digest.hexdigest()[:12]


def _load(entry: str, root: Path) -> ModuleType:
    """Import a benchmark module: a path (``benchmarks/ops.py``) or a dotted name."""
    try:
        if not (entry.endswith(".py") or "/" in entry):
            return importlib.import_module(entry)
        path = (root / entry).resolve()
        if not path.is_file():
            raise InputError(
                f"benchmark module {entry!r} not found at {str(path)!r}",
                hint="list paths relative to the project in [bench] modules",
            )
        name = f"_cuship_bench_{path.stem}_{zlib.crc32(str(path).encode()) & 0xFFFFFFFF:08x}"
        if name not in sys.modules:
            spec = importlib.util.spec_from_file_location(name, path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[name]
                raise
        return sys.modules[name]
    except InputError:
        raise
    except Exception as err:
        raise InputError(
            f"benchmark module {entry!r} failed to import: {type(err).__name__}: {err}",
            hint="fix the module, or import heavy kernel modules inside the case functions",
        ) from err


def _cases_in(module: ModuleType, entry: str) -> list[Case]:
    found: list[Case] = []
    for value in vars(module).values():
        if isinstance(value, Case):
            found.append(value)
        elif isinstance(value, tuple | list) and value and all(isinstance(v, Case) for v in value):
            found.extend(value)
    return [replace(c, module=entry) for c in found]


def discover(
    modules: Sequence[str], root: Path, pythonpath: Sequence[Path] = ()
) -> tuple[Case, ...]:
    """Import the benchmark modules and return their cases in declaration order, names unique."""
    for directory in reversed(tuple(pythonpath)):
        if str(directory) not in sys.path:
            sys.path.insert(0, str(directory))
    cases: dict[str, Case] = {}
    for entry in modules:
        for c in _cases_in(_load(entry, root), entry):
            if c.name in cases and cases[c.name].module != entry:
                raise ConfigError(
                    entry,
                    c.name,
                    f"case {c.name!r} is also declared in {cases[c.name].module!r}",
                    hint="give each benchmark case a unique name",
                )
            cases.setdefault(c.name, c)
    return tuple(cases.values())
