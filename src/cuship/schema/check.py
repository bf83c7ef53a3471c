"""Hold an untrusted JSON document to a published JSON Schema before any of it is used.

The subset of JSON Schema (draft 2020-12) the input schemas of :mod:`cuship.schema.inputs` are
written in: ``type``, ``properties``, ``required``, ``additionalProperties``, ``propertyNames``,
``prefixItems``, ``items``, ``enum``, ``const``, ``pattern``, ``minLength``/``maxLength``,
``minItems``/``maxItems``, ``minProperties``/``maxProperties``, ``minimum``/``maximum`` and
``anyOf``. ``tests/unit/test_input_schemas.py`` holds it to the ``jsonschema`` library on the
published files. Two choices are stricter than the standard, on purpose: ``true`` and
``false`` are never numbers, and a string a ``pattern`` checks never holds a line break (Python's
``$`` matches before a final newline; a label ``"cu130\\n"`` is no label).

The first value refused is a :class:`~cuship.errors.InputError` naming the source and its place
in the document (``variants.cu130.nvidia.sm_arch[0]``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from cuship._read import shown
from cuship.errors import InputError

__all__ = ["SchemaRefused", "check"]

Schema = Mapping[str, Any]


class SchemaRefused(InputError):
    """A document its schema refuses: ``where`` is the place of the first value refused."""

    def __init__(self, source: str, where: str, problem: str) -> None:
        place = f" at {where}" if where else ""
        super().__init__(f"{source}{place}: {problem}", hint="the document is damaged or forged")
        self.where = where
        self.problem = problem


_TYPES: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def check(document: Any, schema: Schema, source: str) -> None:
    """Return when ``schema`` accepts ``document``; else :class:`SchemaRefused` naming
    ``source`` and where."""
    problem = _problem(document, schema, "")
    if problem is not None:
        raise SchemaRefused(source, *problem)


def _problem(value: Any, schema: Schema, where: str) -> tuple[str, str] | None:
    """(where, what is wrong) of the first value ``schema`` refuses, or None."""
    said = _shape(value, schema)
    if said is not None:
        return where, said
    if isinstance(value, str):
        return _string(value, schema, where)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _number(value, schema, where)
    if isinstance(value, list):
        return _array(value, schema, where)
    if isinstance(value, dict):
        return _object(value, schema, where)
    return None


def _shape(value: Any, schema: Schema) -> str | None:
    """What ``anyOf``, ``type``, ``const`` or ``enum`` refuses in ``value``, or None."""
    if "anyOf" in schema and all(_problem(value, o, "") is not None for o in schema["anyOf"]):
        return f"{shown(value)} is none of the forms allowed"
    kinds = schema.get("type")
    if kinds is not None:
        names = [kinds] if isinstance(kinds, str) else list(kinds)
        if not any(_TYPES[name](value) for name in names):
            return f"expected {' or '.join(names)}, got {shown(value)}"
    if "const" in schema and not _same(value, schema["const"]):
        return f"expected {schema['const']!r}, got {shown(value)}"
    if "enum" in schema and not any(_same(value, v) for v in schema["enum"]):
        return f"{shown(value)} is not one of {', '.join(map(repr, schema['enum']))}"
    return None


def _same(value: Any, wanted: Any) -> bool:
    """JSON equality: ``True`` is not ``1``, as ``==`` would say."""
    numbers = bool(_TYPES["number"](value) and _TYPES["number"](wanted))
    return bool((type(value) is type(wanted) or numbers) and value == wanted)


def _string(value: str, schema: Schema, where: str) -> tuple[str, str] | None:
    if len(value) < schema.get("minLength", 0):
        return where, f"{shown(value)} is shorter than {schema['minLength']} characters"
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        return where, f"a string of {len(value):,} characters, more than {schema['maxLength']}"
    pattern = schema.get("pattern")
    if pattern is not None and ("\n" in value or not _compiled(pattern).search(value)):
        return where, f"{shown(value)} is not of the form {pattern}"
    return None


def _number(value: float, schema: Schema, where: str) -> tuple[str, str] | None:
    if "minimum" in schema and value < schema["minimum"]:
        return where, f"{shown(value)} is less than {schema['minimum']}"
    if "maximum" in schema and value > schema["maximum"]:
        return where, f"{shown(value)} is more than {schema['maximum']}"
    return None


def _array(value: list[Any], schema: Schema, where: str) -> tuple[str, str] | None:
    if len(value) < schema.get("minItems", 0):
        return where, f"a list of {len(value)} items, fewer than {schema['minItems']}"
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        return where, f"a list of {len(value):,} items, more than {schema['maxItems']:,}"
    first = schema.get("prefixItems", ())
    items = schema.get("items")
    if not first and items is None:
        return None
    for index, item in enumerate(value):
        sub = first[index] if index < len(first) else items
        found = None if sub is None else _problem(item, sub, f"{where}[{index}]")
        if found is not None:
            return found
    return None


def _object(value: dict[str, Any], schema: Schema, where: str) -> tuple[str, str] | None:
    count = len(value)
    if count < schema.get("minProperties", 0):
        return where, f"an object of {count} keys, fewer than {schema['minProperties']}"
    if "maxProperties" in schema and count > schema["maxProperties"]:
        return where, f"an object of {count:,} keys, more than {schema['maxProperties']:,}"
    missing = [key for key in schema.get("required", ()) if key not in value]
    if missing:
        return where, f"no {missing[0]!r}"
    properties = schema.get("properties", {})
    names = schema.get("propertyNames")
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        place = f"{where}.{key}" if where else key
        if names is not None and (found := _problem(key, names, place)) is not None:
            return place, f"the key {found[1]}"
        sub = properties.get(key, extra)
        if sub is False:
            return where, f"an unknown key {shown(key)}"
        if sub is not True and (found := _problem(item, sub, place)) is not None:
            return found
    return None


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)
