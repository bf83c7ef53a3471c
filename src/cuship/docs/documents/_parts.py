"""The pieces every ``--json`` document's schema is made of: closed objects, nullable values,
lists and enums, each with its description."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["DRAFT", "Schema", "array", "closed", "enum", "maybe", "of"]

Schema = dict[str, Any]
DRAFT = "https://json-schema.org/draft/2020-12/schema"


def of(kind: str, description: str, **more: Any) -> Schema:
    return {"type": kind, "description": description, **more}


def maybe(schema: Schema, description: str) -> Schema:
    """``schema`` or null."""
    inner = {k: v for k, v in schema.items() if k != "description"}
    return {"description": description, "anyOf": [inner, {"type": "null"}]}


def array(description: str, items: Schema | None = None) -> Schema:
    return of("array", description, items=items or {"type": "string"})


def enum(values: Iterable[str], description: str) -> Schema:
    return of("string", description, enum=list(values))


def closed(
    description: str, properties: Mapping[str, Schema], *, optional: Iterable[str] = ()
) -> Schema:
    """A closed object: its ``properties`` and nothing else, all required but ``optional``."""
    left_out = set(optional)
    return of(
        "object",
        description,
        properties=dict(properties),
        required=[k for k in properties if k not in left_out],
        additionalProperties=False,
    )
