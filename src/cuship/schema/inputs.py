"""The JSON Schemas of the untrusted documents cuship reads (issue 43): a wheel's
``variant.json``, an index's ``*-variants.json``, a PEP 691 project page, a cuship manifest,
a check baseline and a bench baseline. Each is published as ``input-<name>.schema.json`` in
``cuship/schema/`` and every reader holds its document to it (:func:`check_input`) before any
of it is used, so a value of the wrong type or form is an exit 2 naming its place, never a
TypeError later.

Where a standard leaves documents open (PEP 691 and PEP 825 allow keys of their own) the
schema is open there and closed on the keys cuship reads; cuship's own documents are closed.
Sizes are bounded: lists and tables have a most, strings a longest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cuship.arch import VARIANT_SM_SCHEMA
from cuship.schema.check import check

__all__ = ["INPUTS", "check_input", "input_schemas", "schema_file"]

Schema = dict[str, Any]
DRAFT = "https://json-schema.org/draft/2020-12/schema"

_TEXT = {"type": "string", "maxLength": 4096}
_URL = {"type": "string", "maxLength": 8192}
_NAME = {"type": "string", "maxLength": 255}
_CUDA = {"type": "string", "pattern": "^[0-9]{1,3}(\\.[0-9]{1,3}){0,2}$", "maxLength": 11}
_SM_ARCH = {"type": "string", "pattern": VARIANT_SM_SCHEMA}
_LABEL = {"type": "string", "pattern": "^[0-9a-z_.]{1,16}$"}
_NUMBER_OR_WORD = {
    "anyOf": [{"type": "number"}, {"enum": ["inf", "-inf", "nan"]}, {"type": "null"}]
}


def _values(item: Schema, most: int = 64) -> Schema:
    return {"type": "array", "items": item, "maxItems": most}


_NVIDIA = {
    "type": "object",
    "description": "the NVIDIA provider's features, each a list of values",
    "properties": {
        "cuda_version_lower_bound": _values(_CUDA),
        "cuda_version_upper_bound": _values(_CUDA),
        "sm_arch": _values(_SM_ARCH, 256),
    },
    "additionalProperties": False,
}
_OTHER_NAMESPACE = {
    "type": "object",
    "maxProperties": 64,
    "additionalProperties": _values({"type": "string", "maxLength": 256}),
}
_VARIANT = {
    "type": "object",
    "description": "a variant's properties by namespace",
    "maxProperties": 16,
    "properties": {"nvidia": _NVIDIA},
    "additionalProperties": _OTHER_NAMESPACE,
}


def _variants_document(description: str, *, one: bool) -> Schema:
    variants: Schema = {
        "type": "object",
        "propertyNames": _LABEL,
        "additionalProperties": _VARIANT,
        "maxProperties": 1 if one else 4096,
    }
    if one:
        variants["minProperties"] = 1
    return {
        "type": "object",
        "description": description,
        "required": ["variants"],
        "properties": {
            "$schema": _URL,
            "default-priorities": {"type": "object", "maxProperties": 16},
            "providers": {
                "type": "object",
                "maxProperties": 64,
                "additionalProperties": {"type": "object", "maxProperties": 64},
            },
            "variants": variants,
        },
    }


_FILE = {
    "type": "object",
    "description": "one file of a PEP 691 project page: its name and URL (the optional keys "
    "are the reader's to distrust one by one: an odd size or hash is not used)",
    "required": ["filename", "url"],
    "properties": {"filename": _NAME, "url": _URL},
}
_PAGE = {
    "type": "object",
    "description": "a PEP 691 project page (keys beyond the PEP's are allowed, as it says)",
    "required": ["files"],
    "properties": {
        "name": _NAME,
        "files": {"type": "array", "items": _FILE, "maxItems": 1_000_000},
    },
}
_MANIFEST = {
    "type": "object",
    "description": "a cuship manifest (cuship-index.json or a project's cuship.json); each "
    "wheel record is held to the judge's record reader when used, one without a file name "
    "is left out",
    "properties": {
        "schema": {"type": ["string", "integer"]},
        "project": _NAME,
        "wheels": {"type": "array", "maxItems": 1_000_000},
        "projects": {"type": "object", "maxProperties": 1_000_000},
    },
}
_CHECK_ENTRY = {
    "type": "object",
    "required": ["status"],
    "additionalProperties": False,
    "properties": {
        "status": {"enum": ["passed", "failed", "error", "skipped"]},
        "max_abs": _NUMBER_OR_WORD,
        "max_rel": _NUMBER_OR_WORD,
        "cases": {"type": "integer", "minimum": 0},
    },
}
_CHECK_BASELINE = {
    "type": "object",
    "description": "what `cuship check --save-baseline` writes",
    "required": ["format", "entries"],
    "additionalProperties": False,
    "properties": {
        "format": {"const": 1},
        "kind": {"const": "cuship-check-baseline"},
        "cuship_version": _TEXT,
        "created": {"type": "number", "minimum": 0},
        "seed": {"type": "integer", "minimum": 0},
        "quick": {"type": "boolean"},
        "device": {"type": "string", "maxLength": 64},
        "entries": {
            "type": "object",
            "maxProperties": 1_000_000,
            "propertyNames": {"maxLength": 1024},
            "additionalProperties": _CHECK_ENTRY,
        },
    },
}
_BENCH_RESULT = {
    "type": "object",
    "required": ["key", "payload"],
    "properties": {
        "key": {"type": "string", "maxLength": 1024},
        "payload": {
            "type": "object",
            "properties": {
                "samples": _values({"type": "number"}, 10_000_000),
                "unit": {"type": "string", "maxLength": 32},
                "throttled": _values({"type": "integer", "minimum": 0}, 10_000_000),
            },
        },
    },
}
_BENCH_BASELINE = {
    "type": "object",
    "description": "what `cuship bench --export json` writes, as far as a baseline reads it",
    "required": ["format", "run", "results"],
    "properties": {
        "cuship_version": _TEXT,
        "run": {
            "type": "object",
            "required": ["fingerprint"],
            "properties": {
                "fingerprint": {
                    "type": "object",
                    "properties": {"machine_id": {"type": ["string", "null"], "maxLength": 256}},
                }
            },
        },
        "results": {"type": "array", "items": _BENCH_RESULT, "maxItems": 1_000_000},
    },
}

INPUTS: Mapping[str, tuple[str, Schema]] = {
    "variant": ("A wheel's variant.json (PEP 825)", _variants_document(
        "the variant.json inside a variant wheel: exactly one variant", one=True
    )),
    "variants": ("An index's *-variants.json (PEP 825)", _variants_document(
        "the variants of one version an index serves", one=False
    )),
    "pep691-page": ("A PEP 691 project page", _PAGE),
    "manifest": ("A cuship manifest", _MANIFEST),
    "check-baseline": ("A check baseline", _CHECK_BASELINE),
    "bench-baseline": ("A bench baseline", _BENCH_BASELINE),
}  # fmt: skip


def schema_file(name: str) -> str:
    """The published file name of input ``name`` (``variant`` → ``input-variant.schema.json``)."""
    return f"input-{name}.schema.json"


def input_schemas() -> dict[str, Schema]:
    """Each input's schema as published, by file name."""
    return {
        schema_file(name): {
            "$schema": DRAFT,
            "$id": f"https://cuship.dev/schema/{schema_file(name)}",
            "title": title,
            **schema,
        }
        for name, (title, schema) in INPUTS.items()
    }


def check_input(document: Any, name: str, source: str) -> None:
    """Hold ``document`` to input ``name``'s schema; :class:`~cuship.schema.check.SchemaRefused`
    (an InputError, exit 2) naming ``source`` and the place of the first value refused."""
    check(document, INPUTS[name][1], source)
