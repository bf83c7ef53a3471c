"""Declaring checks: an op is kernel entry points per engine, a float64 reference and an input spec.

A check module (named in ``[check] modules``) declares ops as module-level :class:`Op` values;
:func:`discover` imports the modules and collects them. Nothing here runs a kernel.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from cuship.project import declared
from cuship.project.declared import Kind

__all__ = [
    "DISTRIBUTIONS",
    "DTYPES",
    "IMPL_KINDS",
    "Impl",
    "Invariant",
    "Op",
    "Scalar",
    "Tensor",
    "discover",
    "load_module",
]

DTYPES = ("float16", "bfloat16", "float32", "float64", "int32", "int64")
DISTRIBUTIONS = ("normal", "uniform", "large", "denormal", "zeros", "inf", "nan")
ImplKind = Literal["native", "triton", "numba", "cuda"]
IMPL_KINDS: tuple[ImplKind, ...] = ("native", "triton", "numba", "cuda")

Shape = Mapping[str, int]


@dataclass(frozen=True, slots=True, kw_only=True)
class Tensor:
    """A named array whose shape is a tuple of dimension names (``("rows", "cols")``).

    ``dtype`` None means the case's dtype; a fixed name (``"float64"``) pins it.
    """

    name: str
    dims: tuple[str, ...]
    dtype: str | None = None

    def shape(self, sizes: Shape) -> tuple[int, ...]:
        return tuple(int(sizes[d]) for d in self.dims)


@dataclass(frozen=True, slots=True, kw_only=True)
class Scalar:
    """A named Python number passed as is; each case picks one of ``values``."""

    name: str
    values: tuple[float, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Invariant:
    """A property of the output beyond closeness, e.g. softmax rows sum to 1.

    ``check(inputs, out, rtol, atol)`` gets float64 arrays and returns None or what is wrong.
    """

    name: str
    check: Callable[[Mapping[str, Any], Any, float, float], str | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Impl:
    """One entry point of an op.

    ``kind`` picks the engines that run it: ``native`` (NumPy arrays, any Python callable),
    ``triton`` (torch tensors; the interpreter on CPU, the GPU with ``--device cuda``),
    ``numba`` (NumPy arrays; the CUDA simulator on CPU), ``cuda`` (the compiled extension, GPU only).
    ``uses`` names features engines may lack (``"libdevice"``, ``"inline_asm"``,
    ``"warp_intrinsics"``); ``bf16_upcast`` says the kernel does its bf16 arithmetic in float32,
    which the Triton interpreter gets right (bf16 arithmetic itself it gets wrong).
    """

    kind: ImplKind
    fn: Callable[..., Any]
    dtypes: tuple[str, ...] | None = None
    uses: tuple[str, ...] = ()
    bf16_upcast: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Op:
    """An op to check: entry points, a reference run in float64 on CPU, and what to feed them.

    Entry points get inputs as keyword arguments; with ``outputs`` declared they also get
    NaN-poisoned output buffers by name and write into them, else their return value is checked.
    """

    name: str
    reference: Callable[..., Any]
    impls: tuple[Impl, ...]
    inputs: tuple[Tensor | Scalar, ...]
    outputs: tuple[Tensor, ...] = ()
    shapes: tuple[Shape, ...] = ()
    extended_shapes: tuple[Shape, ...] = ()
    fuzz_dims: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    dtypes: tuple[str, ...] = ("float32",)
    distributions: tuple[str, ...] = ("normal", "uniform")
    invariants: tuple[Invariant, ...] = ()
    tolerances: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    default: bool = True
    description: str = ""
    module: str = ""

    def __post_init__(self) -> None:
        for dtype in self.dtypes:
            if dtype not in DTYPES:
                raise ValueError(f"op {self.name!r}: unknown dtype {dtype!r}; known: {DTYPES}")
        for dist in self.distributions:
            if dist not in DISTRIBUTIONS:
                raise ValueError(f"op {self.name!r}: unknown distribution {dist!r}")
        if not self.shapes:
            raise ValueError(f"op {self.name!r}: declare at least one shape")
        for impl in self.impls:
            if impl.kind not in IMPL_KINDS:
                raise ValueError(f"op {self.name!r}: unknown impl kind {impl.kind!r}")

    def impl(self, kind: str) -> Impl | None:
        return next((i for i in self.impls if i.kind == kind), None)

    def impl_dtypes(self, impl: Impl) -> tuple[str, ...]:
        if impl.dtypes is None:
            return self.dtypes
        return tuple(d for d in self.dtypes if d in impl.dtypes)


KIND = Kind(
    what="check module",
    section="[check] modules",
    item="op",
    prefix="_cuship_checks",
    import_hint="import kernel modules (torch, triton, numba) inside the entry points, "
    "so a broken kernel file fails its cases instead of the whole run",
)


def load_module(entry: str, root: Path) -> ModuleType:
    """Import a check module: a path (``checks/ops.py``) or a dotted name, relative to ``root``."""
    return declared.load_module(entry, root, KIND)


def discover(modules: Sequence[str], root: Path, pythonpath: Sequence[Path] = ()) -> tuple[Op, ...]:
    """Import the check modules and return their ops, in declaration order, names unique."""
    return declared.discover(modules, root, pythonpath, Op, KIND)
