"""Hold a ``--json`` document to its published JSON Schema (``src/cuship/schema/``)."""

from __future__ import annotations

import json

import jsonschema  # type: ignore[import-untyped]  # no stubs in [dev]

from cuship.docs import documents

BUILD = "build-json.schema.json"
SHIP = "ship-json.schema.json"
CHECK = "check-json.schema.json"
GPU_RUN = "gpu-run-json.schema.json"
BENCH = "bench-json.schema.json"
BURN_IN = "bench-burn-in-json.schema.json"
BENCH_HISTORY = "bench-history-json.schema.json"


def schema_errors(name: str, document: object) -> list[str]:
    """What the published schema ``name`` finds wrong with ``document``, as ``path: message``
    (after a JSON round trip, as a reader of the printed document sees it)."""
    schema = json.loads((documents.SCHEMA_DIR / name).read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    found = validator.iter_errors(json.loads(json.dumps(document)))
    return [f"{error.json_path}: {error.message}" for error in found]
