"""The JSON Schemas of the shipped data files (``<name>.schema.json`` in ``cuship/schema/``), made
from the dataclasses the strict loader reads them into; a unit test keeps the published ones
current."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cuship import schema
from cuship._fs import write_json
from cuship.compat.actions import ActionsFile
from cuship.compat.files import CudaFile, GpusFile, TorchFile
from cuship.toolkit.catalog import ToolkitsFile
from cuship.wheel.cudalibs import CudaLibsFile

__all__ = ["FILES", "data_schemas", "write_schemas"]

# Each data file (``data/<name>.toml``) and the dataclass it is read into.
FILES: dict[str, type] = {
    "cuda": CudaFile,
    "torch": TorchFile,
    "gpus": GpusFile,
    "cuda_libs": CudaLibsFile,
    "toolkits": ToolkitsFile,
    "actions": ActionsFile,
}


def data_schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schema of each shipped data file, by schema file name (``cuda.schema.json``)."""
    out = {}
    for name, cls in FILES.items():
        doc = schema.schema(cls, strict=True)
        doc["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        doc["$id"] = f"https://cuship.dev/schema/{name}.schema.json"
        doc["title"] = f"{name}.toml"
        out[f"{name}.schema.json"] = doc
    return out


def write_schemas(directory: Path = Path(__file__).parents[1] / "schema") -> None:
    """Write :func:`data_schemas` into ``directory`` (by default beside this module)."""
    for name, doc in data_schemas().items():
        write_json(directory / name, doc)
