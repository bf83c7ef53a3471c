"""The JSON Schemas cuship publishes, key by key: config/packages.yml
(``cuship config --packages-schema``), the shipped data files and every ``--json`` document
(each read from its file in ``src/cuship/schema/``; :func:`render_documents`, a page of
their own)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from cuship.docs._md import code, table, text
from cuship.docs.config import type_of

__all__ = ["flatten", "render", "render_documents"]


def _object(schema: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The object schema inside ``schema`` (itself, a list's items, a table's values)."""
    if "properties" in schema:
        return schema
    for option in schema.get("anyOf", ()):
        found = _object(option)
        if found is not None:
            return found
    if schema.get("type") == "array":
        return _object(schema.get("items", {}))
    values = schema.get("additionalProperties")
    if isinstance(values, Mapping):
        return _object(values)
    return None


def _step(schema: Mapping[str, Any]) -> str:
    if schema.get("type") == "array" or any(
        o.get("type") == "array" for o in schema.get("anyOf", ())
    ):
        return "[]"
    if isinstance(schema.get("additionalProperties"), Mapping):
        return ".<name>"
    return ""


def flatten(
    schema: Mapping[str, Any], prefix: str = ""
) -> Iterator[tuple[str, Mapping[str, Any], bool]]:
    """(dotted key, its schema, required) for every key under ``schema``, parents first."""
    required = set(schema.get("required", ()))
    for name, sub in schema.get("properties", {}).items():
        key = f"{prefix}.{name}" if prefix else name
        yield key, sub, name in required
        inner = _object(sub)
        if inner is not None:
            yield from flatten(inner, key + _step(sub))


def _keys(schema: Mapping[str, Any]) -> str:
    """The table of every key under ``schema``; under a list's items (``[].key``) when the
    document is a list."""
    prefix = _step(schema) if schema.get("type") == "array" else ""
    root = _object(schema) if prefix else schema
    rows = [
        [code(key), type_of(sub), "yes" if needed else "", text(str(sub.get("description", "")))]
        for key, sub, needed in flatten(root or {}, prefix)
    ]
    return table(["key", "type", "required", "meaning"], rows)


def render_documents() -> str:
    """The page of the ``--json`` documents: a section per document, from its published
    schema file."""
    from cuship.docs import documents

    parts = [
        "# JSON output\n",
        "What each command prints with `--json` (`cuship check --format json`), for scripts: "
        "the key tables below are read from the published JSON Schemas in "
        "`src/cuship/schema/` (draft 2020-12; every object closed, so a key not listed here "
        "is never printed, and a value that may be null says so). A key under a list is "
        "written `list[].key`.\n",
    ]
    for name in documents.document_schemas():
        schema = json.loads((documents.SCHEMA_DIR / name).read_text(encoding="utf-8"))
        parts.append(f"## {schema['title']}\n")
        parts.append(f"`src/cuship/schema/{name}`: {text(str(schema['description']))}\n")
        parts.append(_keys(schema))
    return "\n".join(parts)


def render() -> str:
    """The page: packages.yml's schema, each data file's, then each ``--json`` document's."""
    from cuship.config import packages_json_schema
    from cuship.docs.dataschemas import data_schemas

    parts = [
        "# Schemas\n",
        "The JSON Schemas cuship publishes, generated from the dataclasses its strict loader "
        "reads each file into, key by key (a key under a list is written `list[].key`, one "
        "under a table of named entries `table.<name>.key`). Point an editor at them for "
        "completion and checking. cuship.toml's own keys are on "
        "[Configuration keys](config.md); what commands print with `--json` is on "
        "[JSON output](json.md).\n",
        "## config/packages.yml\n",
        "A community index's package list (`cuship config --packages-schema` prints the "
        "schema; the guide is [A community index](../community-index.md)).\n",
        _keys(packages_json_schema()),
    ]
    for name, schema in data_schemas().items():
        parts.append(f"## data/{name.removesuffix('.schema.json')}.toml\n")
        parts.append(f"`src/cuship/schema/{name}`: {text(str(schema.get('description', '')))}\n")
        parts.append(_keys(schema))
    return "\n".join(parts)
