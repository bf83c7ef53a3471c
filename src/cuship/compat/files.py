"""The data files as dataclasses: what ``data/{cuda,torch,gpus}.toml`` hold, read by the strict
loader of :mod:`cuship.schema` (their JSON Schemas: :mod:`cuship.docs.dataschemas`)."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from cuship import schema
from cuship._record import frozen
from cuship.compat.models import CudaToolkit, GpuModel, PtxIsa, TorchRelease
from cuship.compat.peaks import GpuPeak
from cuship.schema import Place, field_doc

__all__ = ["CudaFile", "GpusFile", "PtxFile", "TorchFile", "read"]

T = TypeVar("T")


@frozen
class CudaFile:
    """cuda.toml: the CUDA toolkits, their driver minimums and the SASS targets nvcc accepts."""

    toolkit: tuple[CudaToolkit, ...] = field_doc(
        "One table per toolkit release, sorted by version.", non_empty=True
    )


@frozen
class TorchFile:
    """torch.toml: the torch releases and the wheels published for each."""

    release: tuple[TorchRelease, ...] = field_doc(
        "One table per torch minor release, sorted by version.", non_empty=True
    )
    checked: str = field_doc(
        "The day the rows were last held to the package index (YYYY-MM-DD); "
        "`cuship compat --refresh` checks them again.",
        default="",
        schema={"pattern": "^([0-9]{4}-[0-9]{2}-[0-9]{2})?$"},
    )
    checked_against: str = field_doc(
        "The index they were held to (a PEP 503/691 simple index URL).", default=""
    )


@frozen
class PtxFile:
    """ptx.toml: the PTX ISA versions and the CUDA release that first knows each."""

    isa: tuple[PtxIsa, ...] = field_doc(
        "One table per PTX ISA version, sorted by version.", non_empty=True
    )


@frozen
class GpusFile:
    """gpus.toml: the GPU models with the names NVML reports, and datasheet peaks by variant."""

    gpu: tuple[GpuModel, ...] = field_doc("One table per GPU model.", non_empty=True)
    peak: tuple[GpuPeak, ...] = field_doc("One table per GPU variant with peaks.", non_empty=True)


def read(path: Path, cls: type[T]) -> tuple[Place, T]:
    """The data file at ``path`` as ``cls``, and its place for the checks' errors."""
    place = Place(str(path))
    return place, schema.load(cls, schema.read_toml(path), source=place.source, strict=True)
