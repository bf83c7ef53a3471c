"""Gates of a bench run: the baseline it is compared with, and throughput floors per GPU model.

A baseline REF is a run id in the store, ``latest`` (the newest stored run of the project on
this machine), or a JSON file written by ``cuship bench --export``. Runs from another machine
(another ``machine_id``) are refused unless the caller allows it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cuship import _read
from cuship.bench.results import FORMAT, FloorCheck
from cuship.bench.timers.measure import usable
from cuship.errors import InputError, UsageError
from cuship.schema.inputs import check_input

__all__ = [
    "FLOOR_METRICS",
    "Floor",
    "TimingBaseline",
    "check_machine",
    "floor_for",
    "floor_label",
    "load_baseline",
    "parse_floor",
]

# Floor unit -> the result number it is checked against.
FLOOR_METRICS = {"ops/s": "ops_per_s", "GB/s": "gbps", "TFLOP/s": "tflops"}


@dataclass(frozen=True, slots=True, kw_only=True)
class TimingBaseline:
    """The samples of an earlier bench run, by result key (check's ``ErrorBaseline`` holds
    error figures instead)."""

    source: str
    machine_id: str | None
    samples: Mapping[str, tuple[float, ...]]
    units: Mapping[str, str]
    throttled: Mapping[str, tuple[int, ...]] = field(default_factory=dict)

    def kept(self, *, drop_throttled: bool) -> dict[str, tuple[float, ...]]:
        """The samples to compare with, by key: all of them, or without the throttled ones
        when this run drops its own (the same rule on both sides)."""
        return {
            key: tuple(usable(values, self.throttled.get(key, ()), drop_throttled=drop_throttled))
            for key, values in self.samples.items()
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Floor:
    value: float
    unit: str

    @property
    def metric(self) -> str:
        return FLOOR_METRICS[self.unit]


def parse_floor(text: str) -> Floor:
    """``"5000 ops/s"`` → Floor(5000, "ops/s"); units: ops/s, GB/s, TFLOP/s."""
    number, _, unit = text.strip().partition(" ")
    try:
        value = float(number)
    except ValueError:
        value = -1.0
    unit = unit.strip()
    if unit not in FLOOR_METRICS or value <= 0:
        raise UsageError(
            f"{text!r} is not a throughput floor",
            hint='write a positive number and a unit: "5000 ops/s", "900 GB/s", "1.5 TFLOP/s"',
        )
    return Floor(value=value, unit=unit)


def _same_gpu(label: str, gpu: str) -> bool:
    from cuship.compat import gpu_key, load

    compat = load()
    mine, theirs = compat.find_gpu(gpu), compat.find_gpu(label)
    if mine is not None and theirs is not None:
        return mine.name == theirs.name
    return gpu_key(label) == gpu_key(gpu)


def floor_label(gpu: str | None) -> str:
    """How a floor names this machine, as a TOML key: its GPU's model as `cuship compat` knows
    it (``H200``, ``"RTX 4090"``), else the name it reports; ``CPU`` without a GPU."""
    from cuship.compat import load

    if not gpu:
        return "CPU"
    known = load().find_gpu(gpu)
    name = known.name if known is not None else gpu
    return name if name.replace("-", "").replace("_", "").isalnum() else f'"{name}"'


def unasserted_text(gpu: str | None) -> str:
    """What ``--assert-floors`` says when no floor names this machine (``gpu``; None: none)."""
    machine = gpu or "this machine (no GPU: the CPU entry)"
    return (
        f"--assert-floors: no floor names {machine}, so nothing was asserted; add one to "
        f'[bench.floors] or a case\'s floors ({floor_label(gpu)} = "1e10 ops/s"), or '
        "drop --assert-floors on this runner"
    )


def floor_for(floors: Mapping[str, str], gpu: str | None) -> tuple[str, Floor] | None:
    """The floor that applies on this machine: the entry naming its GPU model (matched as
    `cuship compat` matches names), or the ``CPU`` entry on a machine without a GPU."""
    for label, text in floors.items():
        if gpu is None and label.strip().lower() == "cpu":
            return label, parse_floor(text)
        if gpu is not None and label.strip().lower() != "cpu" and _same_gpu(label, gpu):
            return label, parse_floor(text)
    return None


def apply_floor(
    floors: Mapping[str, str], gpu: str | None, numbers: Mapping[str, float]
) -> FloorCheck | None:
    """The floor check of one result, or None when no floor names this machine or the result
    has no number in the floor's unit (its case models no such work)."""
    found = floor_for(floors, gpu)
    if found is None or found[1].metric not in numbers:
        return None
    label, floor = found
    return FloorCheck(
        machine=label, floor=floor.value, unit=floor.unit, measured=numbers.get(floor.metric)
    )


def check_machine(baseline: TimingBaseline, machine_id: str, *, allow_cross_machine: bool) -> None:
    """Refuse a baseline from another machine (exit 2) unless allowed."""
    if allow_cross_machine or baseline.machine_id == machine_id:
        return
    raise UsageError(
        f"baseline {baseline.source!r} was measured on machine {baseline.machine_id!r}, "
        f"this is {machine_id!r} (GPU, driver, CUDA, CPU or timer differ)",
        hint="compare runs from the same machine, or pass --allow-cross-machine",
    )


def _from_rows(source: str, fingerprint: Mapping[str, Any], rows: Any) -> TimingBaseline:
    samples: dict[str, tuple[float, ...]] = {}
    units: dict[str, str] = {}
    throttled: dict[str, tuple[int, ...]] = {}
    for row in rows:
        key, payload = row["key"], row["payload"]
        samples[key] = tuple(float(s) for s in payload.get("samples", ()))
        units[key] = str(payload.get("unit", "s"))
        throttled[key] = tuple(int(i) for i in payload.get("throttled", ()))
    machine = fingerprint.get("machine_id")
    return TimingBaseline(
        source=source, machine_id=machine, samples=samples, units=units, throttled=throttled
    )


def _from_file(path: Path) -> TimingBaseline:
    try:
        doc = _read.read_json(path, _read.BASELINE)
    except OSError as err:
        raise InputError(
            f"cannot read the baseline {str(path)!r}: {err.strerror or err}",
            hint="pass a JSON file written by `cuship bench --export json`",
        ) from err
    found = doc.get("format") if isinstance(doc, dict) else None
    if found != FORMAT:
        writer = doc.get("cuship_version", "unknown") if isinstance(doc, dict) else "unknown"
        raise InputError(
            f"baseline {str(path)!r} was written by cuship {writer} (format {found!r}); "
            f"this cuship reads {FORMAT!r}",
            hint="re-run the baseline with this cuship to refresh it",
        )
    check_input(doc, "bench-baseline", f"baseline {str(path)!r}")
    try:
        return _from_rows(str(path), doc["run"]["fingerprint"], doc["results"])
    except (KeyError, TypeError, ValueError) as err:
        raise InputError(
            f"baseline {str(path)!r} is damaged: {err!r} is missing or malformed",
            hint="re-export it with `cuship bench --export json`",
        ) from err


def _from_store(ref: str, store_path: Path, project: str, machine_id: str) -> TimingBaseline:
    from cuship.store import Store

    if not store_path.is_file():
        raise InputError(
            f"baseline {ref!r}: there is no results store at {str(store_path)!r}",
            hint="run `cuship bench` once without --baseline to record one",
        )
    with Store.open(store_path) as store:
        runs = store.runs(kind="bench", project=project)
        if ref == "latest":
            same = [r for r in runs if r.fingerprint.get("machine_id") == machine_id]
            chosen = (same or list(runs))[-1:] if runs else []
        else:
            chosen = [r for r in runs if str(r.id) == ref]
        if not chosen:
            raise InputError(
                f"baseline {ref!r}: no stored bench run of {project!r} matches in {str(store_path)!r}",
                hint="`cuship report --kind bench` lists the stored runs and their ids",
            )
        run = chosen[0]
        rows = [{"key": r.key, "payload": r.payload} for r in store.results(int(run.id or 0))]
    return _from_rows(f"run {run.id}", run.fingerprint, rows)


def load_baseline(ref: str, *, store_path: Path, project: str, machine_id: str) -> TimingBaseline:
    """Resolve ``--baseline REF``: a run id, ``latest``, or an exported JSON file."""
    if ref == "latest" or ref.isdigit():
        return _from_store(ref, store_path, project, machine_id)
    path = Path(ref)
    if not path.is_file():
        raise InputError(
            f"baseline {ref!r} is neither a run id, 'latest', nor a file",
            hint="pass a run id from `cuship report --kind bench`, latest, or an exported JSON",
        )
    return _from_file(path)
