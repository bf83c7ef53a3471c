"""Peak figures of GPU variants (``[[peak]]`` rows of ``data/gpus.toml``): memory bandwidth and
dense TFLOP/s per precision, each row citing the NVIDIA page it comes from."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from cuship._record import frozen
from cuship.schema import Place, field_doc

__all__ = ["PRECISIONS", "GpuPeak", "check_peaks"]

# The precisions a row may give, and the tensor-core twin looked at beside each.
PRECISIONS = ("fp64", "fp64_tensor", "fp32", "tf32", "bf16", "fp16", "fp8")


def _positive(value: float) -> None:
    if not value > 0:
        raise ValueError(f"must be a positive number, got {value!r}")


def _tflops(table: Mapping[str, float]) -> None:
    for key, value in table.items():
        if key not in PRECISIONS:
            raise ValueError(f"{key!r} is an unknown precision (known: {', '.join(PRECISIONS)})")
        if not value > 0:
            raise ValueError(f"{key} must be a positive number, got {value!r}")


@frozen
class GpuPeak:
    """One GPU variant's datasheet peaks: ``memory_gbps`` (GB/s) and dense TFLOP/s by precision."""

    gpu: str = field_doc("The [[gpu]] model this variant is one of.")
    variant: str = field_doc('The variant, e.g. "H100 SXM5 80GB".')
    names: tuple[str, ...] = field_doc(
        "The names NVML reports for this variant (names of its model).", non_empty=True
    )
    memory_gbps: float = field_doc(
        "Peak memory bandwidth in GB/s.", validate=_positive, schema={"exclusiveMinimum": 0}
    )
    tflops: Mapping[str, float] = field_doc(
        "Dense (not sparse) peak TFLOP/s by precision.",
        validate=_tflops,
        schema={
            "propertyNames": {"enum": list(PRECISIONS)},
            "additionalProperties": {"type": "number", "exclusiveMinimum": 0},
        },
        default_factory=dict,
    )
    source: str = field_doc("https URL of the datasheet the figures come from.")
    note: str = field_doc("Free text for people.", default="")

    def flops_peak(self, dtype: str) -> tuple[str, float] | None:
        """The highest dense figure for ``dtype`` (its own or its tensor-core one) and its name."""
        found = [(k, self.tflops[k]) for k in (dtype, f"{dtype}_tensor") if k in self.tflops]
        return max(found, key=lambda kv: kv[1]) if found else None

    def to_json(self) -> dict[str, object]:
        return {
            "gpu": self.gpu,
            "variant": self.variant,
            "names": list(self.names),
            "memory_gbps": self.memory_gbps,
            "tflops": dict(self.tflops),
            "source": self.source,
            "note": self.note,
        }


def check_peaks(
    rows: Sequence[tuple[Place, GpuPeak]],
    names_of: Mapping[str, set[str]],
    key: Callable[[str], str],
) -> None:
    """Each row cites an https source, belongs to a known model, and names only names of that
    model (normalised by ``key``); no reported name belongs to two variants."""
    owner: dict[str, str] = {}
    for row, peak in rows:
        if not peak.source.startswith("https://"):
            raise row.fail(
                "source", f"{peak.source!r} is not an https URL", hint="cite the datasheet"
            )
        if peak.gpu not in names_of:
            raise row.fail("gpu", f"{peak.gpu!r} is no [[gpu]] model")
        for name in peak.names:
            normal = key(name)
            if normal not in names_of[peak.gpu]:
                raise row.fail("names", f"{name!r} is not a name of {peak.gpu!r}")
            if owner.get(normal, peak.variant) != peak.variant:
                raise row.fail("names", f"{name!r} is already a name of {owner[normal]!r}")
            owner[normal] = peak.variant
