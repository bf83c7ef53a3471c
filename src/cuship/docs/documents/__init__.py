"""The JSON Schemas of the documents cuship's commands print with ``--json`` (``cuship check
--format json`` for check), published as ``<command>-json.schema.json`` in ``cuship/schema/`` (data any layer can read;
this generator sits beside the docs, the one code that renders them).

Each module of this package describes a family of commands and names its documents in
``DOCUMENTS`` (file stem → the command line that prints it, the function that makes its
schema). Written by hand, key by key, each piece once (:mod:`._parts`): every object is closed
(``additionalProperties: false``), every value that can be null says so, enums come from the
code's own ``Literal`` types. Unit tests hold each schema to documents made from real library
objects, and the published files to :func:`document_schemas`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cuship._fs import write_json
from cuship.docs.documents import bench, build, check, gpu_run, machine, packaging
from cuship.docs.documents._parts import DRAFT, Schema

__all__ = ["SCHEMA_DIR", "Schema", "document_schemas", "schema_file", "write_schemas"]

SCHEMA_DIR = Path(__file__).parents[2] / "schema"  # cuship/schema/, where the files are published
_FAMILIES: tuple[dict[str, tuple[str, Callable[[], Schema]]], ...] = (
    build.DOCUMENTS,
    check.DOCUMENTS,
    gpu_run.DOCUMENTS,
    bench.DOCUMENTS,
    machine.DOCUMENTS,
    packaging.DOCUMENTS,
)


def schema_file(stem: str) -> str:
    """The published file name of document ``stem`` (``build`` → ``build-json.schema.json``)."""
    return f"{stem}-json.schema.json"


def document_schemas() -> dict[str, Schema]:
    """The JSON Schema of each ``--json`` document, by schema file name."""
    out = {}
    for family in _FAMILIES:
        for stem, (title, make) in family.items():
            name = schema_file(stem)
            out[name] = {
                "$schema": DRAFT,
                "$id": f"https://cuship.dev/schema/{name}",
                "title": title,
                **make(),
            }
    return out


def write_schemas(directory: Path = SCHEMA_DIR) -> None:
    """Write :func:`document_schemas` into ``directory`` (by default cuship/schema/)."""
    for name, doc in document_schemas().items():
        write_json(directory / name, doc)
