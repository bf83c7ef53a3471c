"""Which cases to run (pure planning) and the input values of one case (seeded, reproducible).

A case is fixed by (seed, op, dtype, case index): every engine sees the same values, and
``--case N`` regenerates exactly case N.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from cuship.check.declare.registry import Op, Scalar, Tensor, edge_sizes

__all__ = [
    "CaseSpec",
    "Inputs",
    "bf16_round",
    "case_seed",
    "edge_sizes",
    "make_inputs",
    "plan_cases",
]

# Fraction of positions set to inf / NaN by those distributions.
_SPECIAL_FRACTION = 0.05
# Fraction of positions set to a tensor's ``ignore`` value.
_IGNORE_FRACTION = 0.125

Shape = Mapping[str, int]


@dataclass(frozen=True, slots=True, kw_only=True)
class CaseSpec:
    """One case of an (op, dtype): dimension sizes, value distribution, derived seed, and the
    value of each scalar input."""

    index: int
    sizes: tuple[tuple[str, int], ...]
    distribution: str
    seed: int
    scalars: tuple[tuple[str, float], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "sizes": dict(self.sizes),
            "distribution": self.distribution,
            "seed": self.seed,
            "scalars": dict(self.scalars),
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> CaseSpec:
        return cls(
            index=int(raw["index"]),
            sizes=tuple((str(k), int(v)) for k, v in raw["sizes"].items()),
            distribution=str(raw["distribution"]),
            seed=int(raw["seed"]),
            scalars=tuple((str(k), v) for k, v in raw.get("scalars", {}).items()),
        )

    def label(self) -> str:
        dims = ",".join(f"{k}={v}" for k, v in self.sizes)
        scalars = "".join(f" {k}={v!r}" for k, v in self.scalars)
        return f"{dims} {self.distribution}{scalars}"


def case_seed(seed: int, op: str, dtype: str, index: int) -> int:
    """The seed of one case: stable across runs, engines and processes."""
    mix = zlib.crc32(f"{seed}/{op}/{dtype}/{index}".encode())
    return (seed * 1_000_003 + mix) % (2**63)


def _fuzz_shape(op: Op, rng: np.random.Generator) -> tuple[tuple[str, int], ...]:
    base = dict(op.shapes[0])
    for dim, (low, high) in op.fuzz_dims.items():
        base[dim] = int(rng.integers(low, high + 1))
    return tuple(base.items())


def crossing_size(low: int, high: int) -> int | None:
    """One past the largest power of two with room in ``[low, high]`` (None: no room)."""
    power = 1
    while power * 2 + 1 <= high:
        power *= 2
    size = power + 1
    return size if low <= size <= high and power >= 2 else None


def _crossing_shape(op: Op) -> tuple[tuple[str, int], ...] | None:
    """The first shape with each fuzzed dimension one past a power of two (quick runs)."""
    base = dict(op.shapes[0])
    for dim, (low, high) in op.fuzz_dims.items():
        size = crossing_size(low, high)
        if size is not None:
            base[dim] = size
    shape = tuple(base.items())
    return None if shape == tuple(dict(op.shapes[0]).items()) else shape


def _crossing_thresholds(op: Op, *, extended: bool) -> list[tuple[tuple[str, int], ...]]:
    """The first shape with each declared threshold's dimension one past it (and, thorough, at
    it)."""
    shapes = []
    for dim, sizes in op.crosses.items():
        for size in sizes:
            for value in (size, size + 1) if extended else (size + 1,):
                shapes.append(tuple({**dict(op.shapes[0]), dim: value}.items()))
    return list(dict.fromkeys(shapes))


def _scalar_plan(op: Op, count: int, *, exhaustive: bool, seed: int, dtype: str) -> list[Any]:
    """Scalar values for ``count`` cases: every combination in turn (exhaustive; the list grows
    to hold them all), else one seeded pick per case."""
    scalars = [spec for spec in op.inputs if isinstance(spec, Scalar)]
    if not scalars:
        return [()] * count
    if exhaustive:
        combos = list(itertools.product(*(spec.values for spec in scalars)))
        size = max(count, len(combos))
        return [
            tuple(zip((s.name for s in scalars), combos[i % len(combos)], strict=True))
            for i in range(size)
        ]
    plan = []
    for i in range(count):
        rng = np.random.default_rng(case_seed(seed, op.name + "/scalars", dtype, i))
        plan.append(tuple((s.name, s.values[int(rng.integers(0, len(s.values)))]) for s in scalars))
    return plan


def plan_cases(
    op: Op,
    dtype: str,
    *,
    seed: int,
    extended: bool,
    all_distributions: bool,
    fuzz: int,
    extra_shapes: Sequence[Mapping[str, int]] = (),
) -> tuple[CaseSpec, ...]:
    """Cases for one (op, dtype): each shape with each distribution, then ``fuzz`` random ones.

    A quick run (not ``extended``) adds one shape crossing a block boundary (see
    :func:`crossing_size`) and one past each of ``op.crosses``; an extended run takes each of
    those at and past it, and covers every combination of scalar values."""
    crossing = None if extended else _crossing_shape(op)
    shapes = [*op.shapes, *extra_shapes, *(op.extended_shapes if extended else ())]
    unique = list(dict.fromkeys(tuple(dict(s).items()) for s in shapes))
    unique += [s for s in _crossing_thresholds(op, extended=extended) if s not in unique]
    unique += [crossing] if crossing is not None and crossing not in unique else []
    dists = op.distributions if all_distributions else op.distributions[:1]
    grid = [(sizes, dist) for dist in dists for sizes in unique]
    scalars = _scalar_plan(op, len(grid), exhaustive=extended, seed=seed, dtype=dtype)
    grid += [grid[0]] * (len(scalars) - len(grid))
    specs = [
        CaseSpec(
            index=i,
            sizes=sizes,
            distribution=dist,
            seed=case_seed(seed, op.name, dtype, i),
            scalars=scalars[i],
        )
        for i, (sizes, dist) in enumerate(grid)
    ]
    for i in range(len(grid), len(grid) + (fuzz if op.fuzz_dims else 0)):
        rng = np.random.default_rng(case_seed(seed, op.name, dtype, i))
        dist = str(rng.choice(list(op.distributions)))
        specs.append(
            CaseSpec(
                index=i,
                sizes=_fuzz_shape(op, rng),
                distribution=dist,
                seed=case_seed(seed, op.name, dtype, i),
                scalars=_scalar_plan(op, 1, exhaustive=False, seed=seed + i, dtype=dtype)[0],
            )
        )
    return tuple(specs)


@dataclass(frozen=True, slots=True, kw_only=True)
class Inputs:
    """``values``: NumPy arrays in the storage dtype (bf16 kept as float32 holding bf16 values);
    ``reference``: the same values widened to float64 (int64 for integers)."""

    values: Mapping[str, Any]
    reference: Mapping[str, Any]


def bf16_round(x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Round float32 values to the nearest bfloat16 (ties to even), kept as float32."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    sixteen = np.uint64(16)  # NumPy 1.x: a 0-d uint64 with a Python int becomes float64
    rounded = (
        (bits + np.uint64(0x7FFF) + ((bits >> sixteen) & np.uint64(1))) >> sixteen
    ) << sixteen
    out = rounded.astype(np.uint32).view(np.float32)
    nan = np.isnan(x)
    out[nan] = np.float32("nan")
    return out


def _storage_dtype(dtype: str) -> Any:
    return np.float32 if dtype == "bfloat16" else np.dtype(dtype)


def _float_values(
    dist: str, shape: tuple[int, ...], dtype: str, rng: np.random.Generator
) -> npt.NDArray[np.float64]:
    info = np.finfo(np.float32 if dtype == "bfloat16" else np.dtype(dtype))
    if dist == "uniform":
        return rng.uniform(-10.0, 10.0, shape)
    if dist == "small":
        return rng.standard_normal(shape) * 1e-3
    if dist == "large":
        return rng.standard_normal(shape) * min(1e4, float(info.max) / 16)
    if dist == "denormal":
        return rng.uniform(-1.0, 1.0, shape) * float(info.smallest_normal)
    if dist == "zeros":
        return np.where(rng.random(shape) < 0.5, 0.0, -0.0)
    values = rng.standard_normal(shape)
    if dist in ("inf", "nan"):
        special = rng.random(shape) < _SPECIAL_FRACTION
        fill = np.where(rng.random(shape) < 0.5, np.inf, -np.inf) if dist == "inf" else np.nan
        values = np.where(special, fill, values)
    return values


def _ints(spec: Tensor, dist: str, shape: tuple[int, ...], sizes: Shape, rng: Any) -> Any:
    bound = spec.bound(sizes)
    low = int(spec.low) if spec.low is not None else (0 if bound is not None else -1000)
    high = int(bound) if bound is not None else 1001
    if dist == "zeros" and spec.low is None and bound is None:
        return np.zeros(shape, dtype=np.int64)
    return rng.integers(low, max(high, low + 1), shape)


def _floats(spec: Tensor, dist: str, shape: tuple[int, ...], dtype: str, rng: Any) -> Any:
    bound = spec.bound({}) if not isinstance(spec.high, str) else None
    if dist == "uniform" and spec.low is not None and bound is not None:
        return rng.uniform(spec.low, bound, shape)
    values = _float_values(dist, shape, dtype, rng)
    if spec.low is None and bound is None:
        return values
    with np.errstate(invalid="ignore"):
        return np.clip(values, spec.low, bound)


def _array(
    spec: Tensor, dist: str, sizes: Shape, dtype: str, rng: np.random.Generator
) -> tuple[Any, Any]:
    shape = spec.shape(sizes)
    if dtype.startswith("int"):
        values = _ints(spec, dist, shape, sizes, rng)
    else:
        values = _floats(spec, dist, shape, dtype, rng)
    if spec.ignore is not None:
        values = np.where(rng.random(shape) < _IGNORE_FRACTION, spec.ignore, values)
    if dtype.startswith("int"):
        stored = np.ascontiguousarray(values, dtype=dtype)
        return stored, stored.astype(np.int64)
    stored = np.ascontiguousarray(values, dtype=_storage_dtype(dtype))
    if dtype == "bfloat16":
        stored = bf16_round(stored)
    return stored, stored.astype(np.float64)


def make_inputs(op: Op, dtype: str, case: CaseSpec) -> Inputs:
    """The input values of ``case``: same seed, same values, on every engine and machine."""
    rng = np.random.default_rng(case.seed)
    sizes = dict(case.sizes)
    values: dict[str, Any] = {}
    reference: dict[str, Any] = {}
    planned = dict(case.scalars)
    for spec in op.inputs:
        if isinstance(spec, Scalar):
            value = planned.get(spec.name)
            if value is None:  # a case planned before scalars were part of the plan
                value = spec.values[int(rng.integers(0, len(spec.values)))]
            values[spec.name] = value
            reference[spec.name] = value
            continue
        assert isinstance(spec, Tensor)
        stored, wide = _array(spec, case.distribution, sizes, spec.dtype or dtype, rng)
        values[spec.name] = stored
        reference[spec.name] = wide
    return Inputs(values=values, reference=reference)
