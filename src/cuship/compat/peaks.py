"""Peak figures of GPU variants (``[[peak]]`` rows of ``data/gpus.toml``): memory bandwidth and
dense TFLOP/s per precision, each row citing the NVIDIA page it comes from."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields

from cuship.compat.rows import Row

__all__ = ["PRECISIONS", "GpuPeak", "check_peaks", "parse_peak"]

# The precisions a row may give, and the tensor-core twin looked at beside each.
PRECISIONS = ("fp64", "fp64_tensor", "fp32", "tf32", "bf16", "fp16", "fp8")


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuPeak:
    """One GPU variant's datasheet peaks: ``memory_gbps`` (GB/s) and dense TFLOP/s by precision."""

    gpu: str
    variant: str
    names: tuple[str, ...]
    memory_gbps: float
    tflops: Mapping[str, float] = field(default_factory=dict)
    source: str
    note: str = ""

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


_KEYS = tuple(f.name for f in fields(GpuPeak))


def _positive(row: Row, name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise row.fail(name, f"must be a positive number, got {value!r}")
    return float(value)


def _tflops(row: Row) -> dict[str, float]:
    raw = row.data.get("tflops", {})
    if not isinstance(raw, dict):
        raise row.fail("tflops", f"must be a table of precision = TFLOP/s, got {raw!r}")
    out = {}
    for key, value in raw.items():
        if key not in PRECISIONS:
            raise row.fail(
                f"tflops.{key}", "unknown precision", hint=f"known: {', '.join(PRECISIONS)}"
            )
        out[key] = _positive(row, f"tflops.{key}", value)
    return out


def parse_peak(row: Row) -> GpuPeak:
    """A ``[[peak]]`` row as a :class:`GpuPeak`."""
    row.only(_KEYS)
    return GpuPeak(
        gpu=row.text("gpu"),
        variant=row.text("variant"),
        names=row.texts("names"),
        memory_gbps=_positive(row, "memory_gbps", row.data.get("memory_gbps")),
        tflops=_tflops(row),
        source=row.text("source"),
        note=row.text("note", default=""),
    )


def check_peaks(
    rows: Sequence[tuple[Row, GpuPeak]],
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
        if not peak.names:
            raise row.fail("names", "must not be empty")
        for name in peak.names:
            normal = key(name)
            if normal not in names_of[peak.gpu]:
                raise row.fail("names", f"{name!r} is not a name of {peak.gpu!r}")
            if owner.get(normal, peak.variant) != peak.variant:
                raise row.fail("names", f"{name!r} is already a name of {owner[normal]!r}")
            owner[normal] = peak.variant
