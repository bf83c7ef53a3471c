"""The data files as dataclasses: what ``data/{cuda,torch,gpus}.toml`` hold, read by the strict
loader of :mod:`cuship.schema`, and the JSON Schema of each (``schema/<name>.schema.json``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from cuship import schema
from cuship.compat.models import CudaToolkit, GpuModel, TorchRelease
from cuship.compat.peaks import GpuPeak
from cuship.schema import Place, field_doc

__all__ = ["CudaFile", "GpusFile", "TorchFile", "data_schemas", "read", "write_schemas"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class CudaFile:
    """cuda.toml: the CUDA toolkits, their driver minimums and the SASS targets nvcc accepts."""

    toolkit: tuple[CudaToolkit, ...] = field_doc(
        "One table per toolkit release, sorted by version.", non_empty=True
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class TorchFile:
    """torch.toml: the torch releases and the wheels published for each."""

    release: tuple[TorchRelease, ...] = field_doc(
        "One table per torch minor release, sorted by version.", non_empty=True
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class GpusFile:
    """gpus.toml: the GPU models with the names NVML reports, and datasheet peaks by variant."""

    gpu: tuple[GpuModel, ...] = field_doc("One table per GPU model.", non_empty=True)
    peak: tuple[GpuPeak, ...] = field_doc("One table per GPU variant with peaks.", non_empty=True)


def read(path: Path, cls: type[T]) -> tuple[Place, T]:
    """The data file at ``path`` as ``cls``, and its place for the checks' errors."""
    place = Place(str(path))
    return place, schema.load(cls, schema.read_toml(path), source=place.source, strict=True)


def _files() -> dict[str, type]:
    from cuship.wheel.cudalibs import CudaLibsFile  # the wheel package owns that list

    return {"cuda": CudaFile, "torch": TorchFile, "gpus": GpusFile, "cuda_libs": CudaLibsFile}


def data_schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schema of each shipped data file, by schema file name (``cuda.schema.json``)."""
    out = {}
    for name, cls in _files().items():
        doc = schema.schema(cls, strict=True)
        doc["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        doc["$id"] = f"https://cuship.dev/schema/{name}.schema.json"
        doc["title"] = f"{name}.toml"
        out[f"{name}.schema.json"] = doc
    return out


def write_schemas(directory: Path) -> None:
    """Write :func:`data_schemas` into ``directory`` (``src/cuship/schema`` in a checkout)."""
    for name, doc in data_schemas().items():
        (directory / name).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
