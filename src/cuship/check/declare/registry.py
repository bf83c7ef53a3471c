"""Declaring checks: an op is kernel entry points per engine, a float64 reference and an input spec.

A check module (named in ``[check] modules``) declares ops as module-level :class:`Op` values;
:func:`discover` imports the modules and collects them. Nothing here runs a kernel.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from cuship.errors import ConfigError, InputError
from cuship.project import declared
from cuship.project.declared import Kind

__all__ = [
    "DISTRIBUTIONS",
    "DTYPES",
    "FEATURES",
    "IMPL_KINDS",
    "DeclarationError",
    "Impl",
    "Invariant",
    "Op",
    "Scalar",
    "Tensor",
    "discover",
    "edge_sizes",
    "load_module",
]

DTYPES = ("float16", "bfloat16", "float32", "float64", "int32", "int64")
DISTRIBUTIONS = ("normal", "uniform", "small", "large", "denormal", "zeros", "inf", "nan")
ImplKind = Literal["native", "triton", "numba", "cuda"]
IMPL_KINDS: tuple[ImplKind, ...] = ("native", "triton", "numba", "cuda")
FEATURES = ("libdevice", "inline_asm", "warp_intrinsics")


class DeclarationError(ValueError):
    """A check declaration names something that does not exist; ``valid`` lists the choices.

    Raised while a check module is imported; :func:`discover` turns it into a ConfigError that
    names the module's file and line.
    """

    def __init__(self, problem: str, valid: Sequence[str]) -> None:
        super().__init__(problem)
        self.valid = tuple(valid)


def _require(what: str, value: str, valid: Sequence[str], owner: str) -> None:
    if value not in valid:
        raise DeclarationError(f"{owner}: unknown {what} {value!r}", valid)


Shape = Mapping[str, int]


def edge_sizes(block: int, *, limit: int | None = None) -> tuple[int, ...]:
    """Sizes that break kernels: 1, small primes, just under/at/over the block, a prime past it."""
    sizes = (1, 2, 7, 31, block - 1, block, block + 1, 3 * block + 7)
    return tuple(s for s in dict.fromkeys(sizes) if s >= 1 and (limit is None or s <= limit))


@dataclass(frozen=True, slots=True, kw_only=True)
class Tensor:
    """A named array whose shape is a tuple of dimension names (``("rows", "cols")``).

    ``dtype`` None means the case's dtype; a fixed name (``"float64"``) pins it. ``low`` and
    ``high`` bound the values: floats are clipped to them (the ``uniform`` distribution draws
    from them); integers are drawn from ``[low, high)``, where ``high`` may name a dimension
    (class indices: ``Tensor(name="target", dims=("rows",), dtype="int64", high="vocab")``).
    ``ignore``: a value put at about one position in eight (an ignore index such as -100).
    """

    name: str
    dims: tuple[str, ...]
    dtype: str | None = None
    low: float | None = None
    high: float | str | None = None
    ignore: float | None = None

    def __post_init__(self) -> None:
        if self.dtype is not None:
            _require("dtype", self.dtype, DTYPES, f"tensor {self.name!r}")

    def bound(self, sizes: Shape) -> float | None:
        """``high`` as a number (a dimension name resolved against the case's sizes)."""
        if isinstance(self.high, str):
            return float(sizes[self.high])
        return self.high

    def shape(self, sizes: Shape) -> tuple[int, ...]:
        return tuple(int(sizes[d]) for d in self.dims)


@dataclass(frozen=True, slots=True, kw_only=True)
class Scalar:
    """A named Python number passed as is; each case picks one of ``values`` (a thorough run
    covers every combination of the op's scalar values, a quick run picks at random)."""

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
    ``"warp_intrinsics"``); libdevice math and bf16 arithmetic run in the Triton interpreter
    through cuship's adaptation (:mod:`cuship.check.interpret.adapt`). ``bf16_upcast`` is accepted and
    no longer needed.
    """

    kind: ImplKind
    fn: Callable[..., Any]
    dtypes: tuple[str, ...] | None = None
    uses: tuple[str, ...] = ()
    bf16_upcast: bool = False

    def __post_init__(self) -> None:
        owner = f"Impl of {getattr(self.fn, '__name__', repr(self.fn))}"
        _require("kind", self.kind, IMPL_KINDS, owner)
        for feature in self.uses:
            _require("feature in uses", feature, FEATURES, owner)
        for dtype in self.dtypes or ():
            _require("dtype", dtype, DTYPES, owner)


@dataclass(frozen=True, slots=True, kw_only=True)
class Op:
    """An op to check: entry points, a reference run in float64 on CPU, and what to feed them.

    Entry points get inputs as keyword arguments; with ``outputs`` declared they also get
    NaN-poisoned output buffers by name and write into them, else their return value is checked.
    An output named like an input is written in place: the entry point gets the input's buffer
    once, and what it holds afterwards is compared. A reference with a ``dtype`` parameter gets
    the case's dtype name. In a quick run each ``fuzz_dims`` dimension also takes a size one past
    the largest power of two its range holds, so quick cases cross a block boundary.

    ``crosses`` names, per dimension, the sizes past which a kernel takes another path (softmax
    switching to a looped kernel above 32,768 columns: ``crosses={"cols": (32768,)}``): a quick
    run adds one case one past each (the first shape, that dimension at N + 1), a thorough run
    one at each and one past it (N and N + 1).

    ``grads`` names inputs whose gradients are checked too: the entry point is differentiable
    (an ``autograd.Function``, or any torch code) and returns its outputs; each gets a seeded
    upstream gradient, and ``torch.autograd.grad`` of the entry point is compared per input
    ("grad of x") with that of the reference, which then gets float64 torch tensors and must
    compute with torch. ``grad_tolerances`` (per dtype) loosens the gradients' tolerance.

    ``scale`` is the size each output element's round-off is held to, when ``|reference|`` is too
    small a yardstick: a function called like the reference (float64 inputs) returning what the
    reference returns, in magnitudes. ``rtol`` then multiplies ``max(|reference|, |scale|)``.
    For a sum of terms give the sum of their magnitudes (saxpy: ``|a*x| + |y|``): a float32
    kernel rounds each term, and where they cancel the result is far smaller than the error
    the rounding of its terms leaves, however right the kernel. Gradients are not scaled.
    """

    name: str
    reference: Callable[..., Any]
    impls: tuple[Impl, ...]
    inputs: tuple[Tensor | Scalar, ...]
    outputs: tuple[Tensor, ...] = ()
    shapes: tuple[Shape, ...] = ()
    extended_shapes: tuple[Shape, ...] = ()
    fuzz_dims: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    crosses: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    dtypes: tuple[str, ...] = ("float32",)
    distributions: tuple[str, ...] = ("normal", "uniform")
    invariants: tuple[Invariant, ...] = ()
    tolerances: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    grads: tuple[str, ...] = ()
    grad_tolerances: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    scale: Callable[..., Any] | None = None
    default: bool = True
    description: str = ""
    module: str = ""

    def __post_init__(self) -> None:
        owner = f"op {self.name!r}"
        for dtype in self.dtypes:
            _require("dtype", dtype, DTYPES, owner)
        for dist in self.distributions:
            _require("distribution", dist, DISTRIBUTIONS, owner)
        if not self.shapes:
            raise DeclarationError(f"{owner}: declare at least one shape", ("shapes=({...},)",))
        for impl in self.impls:
            if not isinstance(impl, Impl):
                raise DeclarationError(
                    f"{owner}: impls holds {impl!r}", ("Impl(kind=..., fn=...)",)
                )
        if self.grads:
            _check_grads(self, owner)
        if self.crosses:
            _check_crosses(self, owner)
        if self.scale is not None and not callable(self.scale):
            raise DeclarationError(
                f"{owner}: scale is {self.scale!r}, not a function",
                ("scale=lambda a, x, y: abs(a * x) + abs(y)",),
            )

    @property
    def reference_takes_dtype(self) -> bool:
        """Whether the reference has a ``dtype`` parameter (it then gets the case's dtype)."""
        try:
            return "dtype" in inspect.signature(self.reference).parameters
        except (TypeError, ValueError):
            return False

    def impl(self, kind: str) -> Impl | None:
        return next((i for i in self.impls if i.kind == kind), None)

    def impl_dtypes(self, impl: Impl) -> tuple[str, ...]:
        if impl.dtypes is None:
            return self.dtypes
        return tuple(d for d in self.dtypes if d in impl.dtypes)


def _check_crosses(op: Op, owner: str) -> None:
    """``crosses`` names dimensions of the first shape, each with positive sizes."""
    dims = list(op.shapes[0])
    for dim, sizes in op.crosses.items():
        _require("dimension in crosses", dim, dims, owner)
        if not sizes or not all(isinstance(n, int) and n >= 1 for n in sizes):
            raise DeclarationError(
                f"{owner}: crosses[{dim!r}] is {sizes!r}, not a tuple of sizes",
                (f'crosses={{"{dim}": (32768,)}}',),
            )


def _check_grads(op: Op, owner: str) -> None:
    """``grads`` names float tensor inputs; entry points take torch tensors and return outputs."""
    floats = [
        spec.name
        for spec in op.inputs
        if isinstance(spec, Tensor) and not (spec.dtype or "float").startswith("int")
    ]
    for name in op.grads:
        _require("input in grads", name, floats, owner)
    for impl in op.impls:
        if impl.kind == "numba":
            raise DeclarationError(
                f"{owner}: grads need a differentiable entry point; numba kernels take NumPy",
                [k for k in IMPL_KINDS if k != "numba"],
            )
    names = {spec.name for spec in op.inputs}
    for out in op.outputs:
        if out.name in names:
            raise DeclarationError(
                f"{owner}: output {out.name!r} is written in place; with grads the entry point "
                "returns its outputs",
                [f"an output name other than {', '.join(sorted(names))}"],
            )


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
    """Import the check modules and return their ops, in declaration order, names unique.

    A declaration naming an unknown kind, dtype, distribution or feature is a ConfigError that
    names the check module's file and line and the valid choices."""
    try:
        return declared.discover(modules, root, pythonpath, Op, KIND)
    except InputError as err:
        cause = err.__cause__
        if isinstance(cause, DeclarationError):
            raise _config_error(cause) from cause
        raise


def _config_error(err: DeclarationError) -> ConfigError:
    from cuship.check.case.frames import user_frame

    frame = user_frame(err)
    where = f"{frame.filename}:{frame.lineno}" if frame is not None else "check module"
    return ConfigError(where, None, str(err), hint=f"valid: {', '.join(err.valid)}")
