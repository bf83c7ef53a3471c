"""``cuship index --keep-existing``: carry the wheels an earlier run indexed into the new index.

A release job indexes only that release's wheels; without this, each Pages deploy would drop
every earlier release. The previous site's manifest says, per wheel, where it lives (an
absolute URL at an earlier release's assets, or ``files/NAME`` inside the site), its hashes,
its ``describe`` record and its attestation; its ``files/NAME.metadata`` holds the PEP 658
metadata. Kept wheels keep their URLs, so links of release 1 still point at release 1's assets
when release 2 is indexed with another ``--base-url``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from packaging.utils import canonicalize_name

from cuship.errors import InputError
from cuship.index.attached import ATTESTATION_SUFFIX, AttestationRef
from cuship.index.scan import IndexedWheel

__all__ = ["Kept", "read_existing"]

_HINT = "repair or delete the site, or run without --keep-existing to start afresh"


@dataclass(frozen=True, slots=True, kw_only=True)
class Kept:
    """Wheels of the previous index that stay, with where each one lives."""

    wheels: tuple[IndexedWheel, ...] = ()
    bases: Mapping[str, str | None] = field(default_factory=dict)  # None: inside the site
    descriptions: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    attestations: Mapping[str, AttestationRef] = field(default_factory=dict)


def _base_of(url: str) -> str | None:
    """The base URL of an absolute file URL; None for a link into the site's ``files/``."""
    if urlsplit(url).scheme in ("http", "https"):
        return url.rsplit("/", 1)[0]
    return None


def _metadata(out: Path, record: Mapping[str, Any]) -> bytes:
    path = out / "files" / f"{record['filename']}.metadata"
    try:
        data = path.read_bytes()
    except OSError as err:
        raise InputError(
            f"the existing index lists {record['filename']!r} but {str(path)!r} is unreadable: "
            f"{err.strerror or err}",
            hint=_HINT,
        ) from err
    if hashlib.sha256(data).hexdigest() != record["metadata_sha256"]:
        raise InputError(f"{str(path)!r} does not match the manifest's sha256", hint=_HINT)
    return data


def _wheel(out: Path, record: Mapping[str, Any]) -> IndexedWheel:
    filename = str(record["filename"])
    path = out / "files" / filename
    if _base_of(str(record["url"])) is None and not path.is_file():
        raise InputError(
            f"the existing index lists {filename!r} in the site, but {str(path)!r} is missing",
            hint=_HINT,
        )
    return IndexedWheel(
        filename=filename,
        project=canonicalize_name(str(record["project"])),
        version=str(record["version"]),
        local=record.get("local"),
        tags=tuple(str(t) for t in record["tags"]),
        sha256=str(record["sha256"]),
        size=int(record["size"]),
        requires_python=record.get("requires_python"),
        metadata=_metadata(out, record),
        metadata_sha256=str(record["metadata_sha256"]),
        path=path,
    )


def _attestation(out: Path, record: Mapping[str, Any]) -> AttestationRef | None:
    link = record.get("attestation")
    if not isinstance(link, Mapping):
        return None
    if _base_of(str(link["url"])) is not None:
        return AttestationRef(sha256=str(link["sha256"]), content=None)
    path = out / "files" / f"{record['filename']}{ATTESTATION_SUFFIX}"
    try:
        content = path.read_bytes()
    except OSError as err:
        raise InputError(f"cannot read {str(path)!r}: {err.strerror or err}", hint=_HINT) from err
    return AttestationRef(sha256=hashlib.sha256(content).hexdigest(), content=content)


def _records(out: Path) -> list[Mapping[str, Any]]:
    from cuship.index.render import MANIFEST

    path = out / MANIFEST
    try:
        document = json.loads(path.read_bytes())
        records = document["wheels"]
    except FileNotFoundError:
        return []
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise InputError(
            f"cannot read the existing manifest {str(path)!r}: {err}", hint=_HINT
        ) from err
    if not isinstance(records, list) or not all(isinstance(r, Mapping) for r in records):
        raise InputError(f"{str(path)!r} has no list of wheel records", hint=_HINT)
    return records


def read_existing(out: Path, *, replaced: Collection[str] = ()) -> Kept:
    """The wheels the index at ``out`` lists, except the filenames in ``replaced``."""
    wheels: list[IndexedWheel] = []
    bases: dict[str, str | None] = {}
    descriptions: dict[str, Mapping[str, object]] = {}
    attestations: dict[str, AttestationRef] = {}
    for record in _records(out):
        filename = str(record.get("filename"))
        if filename in replaced:
            continue
        try:
            wheels.append(_wheel(out, record))
            bases[filename] = _base_of(str(record["url"]))
            describe = record.get("describe")
            descriptions[filename] = describe if isinstance(describe, Mapping) else {}
            attestation = _attestation(out, record)
        except (KeyError, TypeError, ValueError) as err:
            raise InputError(
                f"the manifest record of {filename!r} is broken: {err!r}", hint=_HINT
            ) from err
        if attestation is not None:
            attestations[filename] = attestation
    return Kept(
        wheels=tuple(wheels), bases=bases, descriptions=descriptions, attestations=attestations
    )
