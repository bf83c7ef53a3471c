"""Wheel variants (PEP 825, PEP 850 schema 0.2.0) for NVIDIA builds: the file name with its
variant label, the ``variant.json`` a variant wheel carries, the index's merged
``{name}-{version}-variants.json``, and the NVIDIA properties read from a wheel's binaries.

What uv 0.13.8 needs to pick a variant (``research/variants.md``, established by experiment):
the label is the last dash component of the file name (lower case ``[0-9a-z_.]``, 16 characters
or fewer to be safe); ``variant.json`` names exactly one variant; the provider block is exactly
the NVIDIA plugin's (uv then uses its built-in NVIDIA provider); the features are
``cuda_version_lower_bound`` (at most the driver's CUDA), ``cuda_version_upper_bound``
(exclusive) and ``sm_arch`` (``{X}{m}_real`` serves a GPU X.Y for m <= Y of the same major;
``{X}0_virtual`` every GPU of major X).

The properties a wheel earns from its binaries, and the twins a build writes, are
:mod:`cuship.judge.variants`'.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from cuship import _names, _read
from cuship.errors import InputError

__all__ = [
    "NAMESPACE",
    "NULL",
    "PROVIDER",
    "SCHEMA",
    "VARIANT_JSON",
    "check_label",
    "default_label",
    "dumps",
    "merged",
    "read_document",
    "read_wheel_variant",
    "split_variant",
    "variant_document",
    "variant_members",
    "variants_json_name",
]

SCHEMA = "https://variants-schema.wheelnext.dev/peps/850/v0.2.0.json"
NAMESPACE = "nvidia"
PROVIDER: Mapping[str, Any] = {
    "requires": ["nvidia-variant-provider>=0.0.1,<1.0.0"],
    "plugin-api": "nvidia_variant_provider.plugin:NvidiaVariantPlugin",
}
NULL = "null"  # the variant with no property: what uv takes when no GPU build fits
VARIANT_JSON = "variant.json"
_LABEL = re.compile(r"[0-9a-z_.]{1,16}")
_FEATURES = ("cuda_version_lower_bound", "cuda_version_upper_bound", "sm_arch")


def check_label(label: str, *, null: bool = False) -> str:
    """``label`` when it is a variant label uv accepts and every tool keeps (lower case
    ``[0-9a-z_.]``, at most 16 characters, not ``null`` unless ``null``); a
    :class:`UsageError` naming it otherwise (:func:`cuship._names.variant_label`)."""
    return _names.variant_label(label, null=null)


def split_variant(filename: str) -> tuple[str, str | None]:
    """(the file name without its variant label, the label or None): a wheel name has a label
    as its last dash component when it has one component more than its tags and build tag
    need (``pkg-1.0-py3-none-any-cu130.whl``; a build tag starts with a digit, a Python tag
    never does)."""
    if not filename.endswith(".whl"):
        return filename, None
    parts = filename[:-4].split("-")
    if len(parts) == 7 or (len(parts) == 6 and not parts[2][:1].isdigit()):
        return "-".join(parts[:-1]) + ".whl", parts[-1]
    return filename, None


def variants_json_name(dist: str, version: str) -> str:
    """``pkg-1.0-variants.json``: the index's file of a version's variants (``dist`` in the
    wheel-file spelling of the name)."""
    return f"{dist}-{version}-variants.json"


def variant_document(label: str, props: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """The ``variant.json`` of one variant wheel (``props``: the NVIDIA features; none for
    the null variant)."""
    nvidia = {f: list(props[f]) for f in _FEATURES if props.get(f)}
    return {
        "$schema": SCHEMA,
        "default-priorities": {"namespace": [NAMESPACE]},
        "providers": {NAMESPACE: dict(PROVIDER)},
        "variants": {check_label(label, null=not nvidia): ({NAMESPACE: nvidia} if nvidia else {})},
    }


def merged(documents: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The index's ``variants.json`` of one version: every variant of its wheels, labels
    sorted (a label seen twice must describe the same variant)."""
    variants: dict[str, Any] = {}
    for document in documents:
        for label, entry in document.get("variants", {}).items():
            if variants.get(label, entry) != entry:
                raise InputError(
                    f"two wheels of one version name the variant {label!r} with different "
                    f"properties: {variants[label]!r} and {entry!r}",
                    hint="give each build its own label",
                )
            variants[label] = entry
    return {
        "$schema": SCHEMA,
        "default-priorities": {"namespace": [NAMESPACE]},
        "providers": {NAMESPACE: dict(PROVIDER)},
        "variants": dict(sorted(variants.items())),
    }


def dumps(document: Mapping[str, Any]) -> bytes:
    """The bytes cuship writes for a variant document (sorted keys: the same bytes each time)."""
    return (json.dumps(document, indent=1, sort_keys=True) + "\n").encode("utf-8")


def read_document(data: bytes, source: str) -> dict[str, Any]:
    """A ``variant.json`` read from a wheel (untrusted): JSON held to the published schema
    (``input-variant.schema.json``: one variant, its label of the allowed form, the NVIDIA
    features' values as uv reads them); :class:`InputError` naming ``source`` otherwise."""
    from cuship import _read
    from cuship.schema.inputs import check_input

    try:
        document = _read.loads(data)
    except _read.JsonRefused as err:
        raise InputError(f"{source!r} {err.problem}") from err
    check_input(document, "variant", repr(source))
    checked: dict[str, Any] = document
    return checked


def default_label(local: str | None) -> str | None:
    """The variant label a labelled build gets by default: its local label, when it is one
    (``cu130``), else None."""
    if local and _LABEL.fullmatch(local.lower()):
        return local.lower()
    return None


def read_wheel_variant(wheel: Path) -> dict[str, Any] | None:
    """The ``variant.json`` inside a wheel (checked), or None for a plain wheel."""

    with _read.archive(wheel) as archive:
        members = variant_members(archive.namelist())
        if not members:
            return None
        if len(members) > 1:
            raise InputError(
                f"{wheel.name} holds {len(members)} variant.json files ({', '.join(members)}): "
                "a variant made from a variant",
                hint="make the variant from the plain or labelled wheel",
            )
        (member,) = members
        info = archive.getinfo(member)
        if info.file_size > _MAX_DOCUMENT:
            raise InputError(f"{wheel.name}:{member} is {info.file_size} bytes; refused")
        data = archive.read(member)
    found: dict[str, Any] = read_document(data, f"{wheel.name}:{member}")
    return found


def variant_members(names: Iterable[str]) -> list[str]:
    """The ``*.dist-info/variant.json`` members among an archive's ``names``."""
    return [n for n in names if n.count("/") == 1 and n.endswith(f".dist-info/{VARIANT_JSON}")]


_MAX_DOCUMENT = 1024 * 1024
