"""Which cases to run (pure planning) and the input values of one case (seeded, reproducible).

A case is fixed by (seed, op, dtype, case index): every engine sees the same values, and
``--case N`` regenerates exactly case N.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from cuship.check.registry import Op, Scalar, Tensor

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


@dataclass(frozen=True, slots=True, kw_only=True)
class CaseSpec:
    """One case of an (op, dtype): dimension sizes, value distribution, derived seed."""

    index: int
    sizes: tuple[tuple[str, int], ...]
    distribution: str
    seed: int

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "sizes": dict(self.sizes),
            "distribution": self.distribution,
            "seed": self.seed,
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> CaseSpec:
        return cls(
            index=int(raw["index"]),
            sizes=tuple((str(k), int(v)) for k, v in raw["sizes"].items()),
            distribution=str(raw["distribution"]),
            seed=int(raw["seed"]),
        )

    def label(self) -> str:
        dims = ",".join(f"{k}={v}" for k, v in self.sizes)
        return f"{dims} {self.distribution}"


def edge_sizes(block: int, *, limit: int | None = None) -> tuple[int, ...]:
    """Sizes that break kernels: 1, small primes, just under/at/over the block, a prime past it."""
    sizes = (1, 2, 7, 31, block - 1, block, block + 1, 3 * block + 7)
    return tuple(s for s in dict.fromkeys(sizes) if s >= 1 and (limit is None or s <= limit))


def case_seed(seed: int, op: str, dtype: str, index: int) -> int:
    """The seed of one case: stable across runs, engines and processes."""
    mix = zlib.crc32(f"{seed}/{op}/{dtype}/{index}".encode())
    return (seed * 1_000_003 + mix) % (2**63)


def _fuzz_shape(op: Op, rng: np.random.Generator) -> tuple[tuple[str, int], ...]:
    base = dict(op.shapes[0])
    for dim, (low, high) in op.fuzz_dims.items():
        base[dim] = int(rng.integers(low, high + 1))
    return tuple(base.items())


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
    """Cases for one (op, dtype): each shape with each distribution, then ``fuzz`` random ones."""
    shapes = [*op.shapes, *extra_shapes, *(op.extended_shapes if extended else ())]
    unique = list(dict.fromkeys(tuple(dict(s).items()) for s in shapes))
    dists = op.distributions if all_distributions else op.distributions[:1]
    grid = [(sizes, dist) for dist in dists for sizes in unique]
    specs = [
        CaseSpec(index=i, sizes=sizes, distribution=dist, seed=case_seed(seed, op.name, dtype, i))
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
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
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


def _array(
    dist: str, shape: tuple[int, ...], dtype: str, rng: np.random.Generator
) -> tuple[Any, Any]:
    if dtype.startswith("int"):
        ints = np.zeros(shape, dtype=dtype) if dist == "zeros" else rng.integers(-1000, 1001, shape)
        stored = np.ascontiguousarray(ints, dtype=dtype)
        return stored, stored.astype(np.int64)
    stored = np.ascontiguousarray(
        _float_values(dist, shape, dtype, rng), dtype=_storage_dtype(dtype)
    )
    if dtype == "bfloat16":
        stored = bf16_round(stored)
    return stored, stored.astype(np.float64)


def make_inputs(op: Op, dtype: str, case: CaseSpec) -> Inputs:
    """The input values of ``case``: same seed, same values, on every engine and machine."""
    rng = np.random.default_rng(case.seed)
    sizes = dict(case.sizes)
    values: dict[str, Any] = {}
    reference: dict[str, Any] = {}
    for spec in op.inputs:
        if isinstance(spec, Scalar):
            value = spec.values[int(rng.integers(0, len(spec.values)))]
            values[spec.name] = value
            reference[spec.name] = value
            continue
        assert isinstance(spec, Tensor)
        stored, wide = _array(case.distribution, spec.shape(sizes), spec.dtype or dtype, rng)
        values[spec.name] = stored
        reference[spec.name] = wide
    return Inputs(values=values, reference=reference)
