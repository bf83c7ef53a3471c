"""A result against the hardware: its share of the GPU's datasheet peaks.

Bandwidth share: the case's ``bytes`` work model over the median time, over the variant's memory
bandwidth. FLOP/s share: its ``flops`` model over the median, over the dense peak of the case's
precision, which is the case's ``peak_dtype=``, else its ``dtype`` parameter, else fp32 (and the
result says it was assumed).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from cuship.compat.peaks import GpuPeak

__all__ = ["DtypeOrigin", "PeakShare", "case_dtype", "normalise_dtype", "peak_share"]

DtypeOrigin = Literal["declared", "params", "assumed"]

_DTYPES = {
    "float64": "fp64", "double": "fp64", "fp64": "fp64", "f64": "fp64",
    "float32": "fp32", "float": "fp32", "single": "fp32", "fp32": "fp32", "f32": "fp32",
    "tf32": "tf32", "tensorfloat32": "tf32",
    "bfloat16": "bf16", "bf16": "bf16",
    "float16": "fp16", "half": "fp16", "fp16": "fp16", "f16": "fp16",
}  # fmt: skip


def normalise_dtype(value: Any) -> str | None:
    """``torch.bfloat16``, ``"bfloat16"``, ``numpy.float32``, ``"fp8"`` → bf16/fp32/fp8; None
    for anything else (integers, unknown names)."""
    words = re.findall(r"[a-z0-9_]+", str(getattr(value, "__name__", value)).lower())
    if not words:
        return None
    last = words[-1]
    if last.startswith(("float8", "fp8")):
        return "fp8"
    return _DTYPES.get(last)


def case_dtype(declared: str | None, params: Mapping[str, Any]) -> tuple[str, DtypeOrigin]:
    """The precision a case's FLOP/s are compared in, and where it came from."""
    if declared:
        return normalise_dtype(declared) or declared.lower(), "declared"
    from_params = normalise_dtype(params["dtype"]) if "dtype" in params else None
    if from_params is not None:
        return from_params, "params"
    return "fp32", "assumed"


@dataclass(frozen=True, slots=True, kw_only=True)
class PeakShare:
    """What share of the variant's peaks one result reached (None where not modelled)."""

    variant: str
    source: str
    dtype: str
    dtype_origin: DtypeOrigin
    memory_gbps: float
    bandwidth_fraction: float | None = None
    precision: str | None = None  # the figure compared with: "bf16", "fp64_tensor", ...
    peak_tflops: float | None = None
    flops_fraction: float | None = None
    note: str | None = None

    def describe(self) -> str:
        """``"54% of 3350 GB/s; 71% of 989.5 bf16 TFLOP/s"`` (with how the dtype was found)."""
        parts = []
        if self.bandwidth_fraction is not None:
            parts.append(f"{self.bandwidth_fraction:.0%} of {self.memory_gbps:g} GB/s")
        if self.flops_fraction is not None:
            parts.append(
                f"{self.flops_fraction:.0%} of {self.peak_tflops:g} {self.precision} TFLOP/s"
            )
        if self.note:
            parts.append(self.note)
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "source": self.source,
            "dtype": self.dtype,
            "dtype_origin": self.dtype_origin,
            "memory_gbps": self.memory_gbps,
            "bandwidth_fraction": self.bandwidth_fraction,
            "precision": self.precision,
            "peak_tflops": self.peak_tflops,
            "flops_fraction": self.flops_fraction,
            "note": self.note,
        }


def peak_share(
    peak: GpuPeak,
    *,
    median: float,
    work: Mapping[str, float | None],
    dtype: str,
    origin: DtypeOrigin,
) -> PeakShare | None:
    """The shares of ``peak`` a result with ``median`` seconds per call and ``work`` reached;
    None when the case models neither bytes nor flops (or the median is not positive)."""
    moved, flops = work.get("bytes"), work.get("flops")
    if not median > 0 or (moved is None and flops is None):
        return None
    bandwidth = moved / median / 1e9 / peak.memory_gbps if moved is not None else None
    found = peak.flops_peak(dtype) if flops is not None else None
    note = None
    if flops is not None and found is None:
        note = f"no {dtype} peak known for {peak.variant}"
    elif flops is not None and origin == "assumed":
        note = "dtype not declared: compared with fp32 (declare peak_dtype=)"
    return PeakShare(
        variant=peak.variant,
        source=peak.source,
        dtype=dtype,
        dtype_origin=origin,
        memory_gbps=peak.memory_gbps,
        bandwidth_fraction=bandwidth,
        precision=found[0] if found else None,
        peak_tflops=found[1] if found else None,
        flops_fraction=flops / median / 1e12 / found[1] if flops is not None and found else None,
        note=note,
    )
