"""Declaring benchmarks: a case is a callable, a parameter grid, a setup and a work model.

A benchmark module (named in ``[bench] modules``) declares cases with :func:`case`::

    from cuship.bench import case

    @case(
        params={"n": [2**16, 2**20]},
        setup=lambda rng, n: {"x": rng.standard_normal(n), "y": rng.standard_normal(n)},
        bytes=lambda n: 3 * 4 * n,
        flops=lambda n: 2 * n,
        peak_dtype="fp32",
    )
    def saxpy(x, y):
        return cuvecops.saxpy(2.0, x, y)

``setup(rng, **params)`` builds the inputs from a seeded ``numpy.random.Generator`` (never zeros)
and returns the keyword arguments of the timed call; without a setup the call gets the params.
``peak_dtype`` names the precision the FLOP/s are compared with on a known GPU ("bf16", "fp8",
"tf32"...); without it a ``dtype`` parameter decides, else fp32 (and the result says so).
Nothing here runs a case.
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

from cuship.project import declared
from cuship.project.declared import Kind

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
    peak_dtype: str | None = None
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
    peak_dtype: str | None = None,
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
    peak_dtype: str | None = None,
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
            peak_dtype=peak_dtype,
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


KIND = Kind(
    what="benchmark module",
    section="[bench] modules",
    item="case",
    prefix="_cuship_bench",
    import_hint="fix the module, or import heavy kernel modules inside the case functions",
)


def discover(
    modules: Sequence[str], root: Path, pythonpath: Sequence[Path] = ()
) -> tuple[Case, ...]:
    """Import the benchmark modules and return their cases in declaration order, names unique."""
    return declared.discover(modules, root, pythonpath, Case, KIND)
