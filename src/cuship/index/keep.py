"""``cuship index --keep-existing``: carry the wheels an earlier run indexed into the new index.

A release job indexes only that release's wheels; without this, each Pages deploy would drop
every earlier release. The previous site's manifests say, per wheel, where it lives (an
absolute URL at an earlier release's assets, or ``files/NAME`` inside the site), its hashes,
its yank, its ``describe`` record and its attestation; its ``files/NAME.metadata`` holds the
PEP 658 metadata. A site of schema 2 keeps them per project (``simple/PROJECT/cuship.json``,
listed by ``cuship-index.json``); one of schema 1 in ``cuship-index.json`` itself. Kept wheels keep their URLs, so links of release 1 still point at release 1's assets
when release 2 is indexed with another ``--base-url``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping
from dataclasses import field
from pathlib import Path
from typing import Any

from cuship import _fs, _read
from cuship._record import frozen
from cuship.errors import InputError
from cuship.index.attached import ATTESTATION_SUFFIX, AttestationRef
from cuship.index.render import MANIFEST, PROJECT_MANIFEST, Row, base_of
from cuship.index.scan import IndexedWheel
from cuship.wheel.read.filename import canonical_name

__all__ = [
    "Kept",
    "check_in_site",
    "project_records",
    "project_rows",
    "read_existing",
    "site_records",
]

_HINT = "repair or delete the site, or run without --keep-existing to start afresh"


@frozen
class Kept:
    """Wheels of the previous index that stay, with where each one lives."""

    wheels: tuple[IndexedWheel, ...] = ()
    bases: Mapping[str, str | None] = field(default_factory=dict)  # None: inside the site
    descriptions: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    attestations: Mapping[str, AttestationRef] = field(default_factory=dict)
    yanks: Mapping[str, str | None] = field(default_factory=dict)

    def only(self, filenames: Collection[str]) -> Kept:
        """These kept wheels (of those listed here) and what goes with them, nothing else."""
        names = set(filenames)
        return Kept(
            wheels=tuple(w for w in self.wheels if w.filename in names),
            bases={f: b for f, b in self.bases.items() if f in names},
            descriptions={f: d for f, d in self.descriptions.items() if f in names},
            attestations={f: a for f, a in self.attestations.items() if f in names},
            yanks={f: y for f, y in self.yanks.items() if f in names},
        )


def _metadata(out: Path, record: Mapping[str, Any]) -> bytes:
    try:
        path = _fs.under(out, "files", f"{record['filename']}.metadata")
        data = _read.read_bytes(path, _read.INDEX_FILE)
    except (OSError, _read.Refused) as err:
        raise InputError(
            f"the existing index lists {record['filename']!r} but its metadata is unreadable: "
            f"{err.message if isinstance(err, _read.Refused) else err.strerror or err}",
            hint=_HINT,
        ) from err
    if hashlib.sha256(data).hexdigest() != record["metadata_sha256"]:
        raise InputError(f"{str(path)!r} does not match the manifest's sha256", hint=_HINT)
    return data


def check_in_site(out: Path, filename: str, base: str | None) -> Path:
    """The path of a kept wheel in the site; an :class:`InputError` when the index lists it
    in the site (``base`` None) and the file is gone (a page would link a missing file)."""
    path = _fs.under(out, "files", filename)
    if base is None and not path.is_file():
        raise InputError(
            f"the existing index lists {filename!r} in the site, but {str(path)!r} is missing",
            hint=_HINT,
        )
    return path


def _wheel(out: Path, record: Mapping[str, Any]) -> IndexedWheel:
    filename = str(record["filename"])
    path = check_in_site(out, filename, base_of(str(record["url"])))
    return IndexedWheel(
        filename=filename,
        project=canonical_name(str(record["project"])),
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
    if base_of(str(link["url"])) is not None:
        return AttestationRef(sha256=str(link["sha256"]), content=None)
    path = _fs.under(out, "files", f"{record['filename']}{ATTESTATION_SUFFIX}")
    try:
        content = _read.read_bytes(path, _read.ENVELOPE)
    except OSError as err:
        raise InputError(f"cannot read {str(path)!r}: {err.strerror or err}", hint=_HINT) from err
    return AttestationRef(sha256=hashlib.sha256(content).hexdigest(), content=content)


def _load(path: Path) -> Any:
    try:
        return json.loads(_read.read_bytes(path, _read.INDEX_FILE))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise InputError(f"cannot read the manifest {str(path)!r}: {err}", hint=_HINT) from err


def _wheel_list(path: Path, document: Any) -> list[Mapping[str, Any]]:
    records = document.get("wheels") if isinstance(document, Mapping) else None
    if not isinstance(records, list) or not all(isinstance(r, Mapping) for r in records):
        raise InputError(f"{str(path)!r} has no list of wheel records", hint=_HINT)
    return records


def project_records(out: Path, project: str) -> list[Mapping[str, Any]]:
    """The records of one project's manifest (none when the project has no manifest)."""
    path = out / "simple" / project / PROJECT_MANIFEST
    document = _load(path)
    return [] if document is None else _wheel_list(path, document)


def project_rows(out: Path, project: str) -> list[Row]:
    """One project's rows, from its manifest; a broken record is an :class:`InputError`."""
    rows = []
    for record in project_records(out, project):
        try:
            rows.append(Row.from_record(record))
        except (KeyError, TypeError, ValueError) as err:
            raise InputError(
                f"the manifest record of {record.get('filename')!r} in project {project!r} is "
                f"broken: {err!r}",
                hint=_HINT,
            ) from err
    return rows


def site_records(out: Path) -> list[Mapping[str, Any]]:
    """Every wheel record of the index at ``out`` (schema 2: each project's manifest in turn;
    schema 1: the one manifest); an index not there yet has none."""
    path = out / MANIFEST
    document = _load(path)
    if document is None:
        return []
    if isinstance(document, Mapping) and isinstance(document.get("projects"), Mapping):
        records: list[Mapping[str, Any]] = []
        for project in document["projects"]:
            records.extend(project_records(out, str(project)))
        return records
    return _wheel_list(path, document)


def read_existing(out: Path, *, replaced: Collection[str] = ()) -> Kept:
    """The wheels the index at ``out`` lists, except the filenames in ``replaced``."""
    wheels: list[IndexedWheel] = []
    bases: dict[str, str | None] = {}
    descriptions: dict[str, Mapping[str, object]] = {}
    attestations: dict[str, AttestationRef] = {}
    yanks: dict[str, str | None] = {}
    for record in site_records(out):
        filename = str(record.get("filename"))
        if filename in replaced:
            continue
        try:
            wheels.append(_wheel(out, record))
            bases[filename] = base_of(str(record["url"]))
            describe = record.get("describe")
            descriptions[filename] = describe if isinstance(describe, Mapping) else {}
            yanked = record.get("yanked")
            yanks[filename] = None if yanked is None else str(yanked)
            attestation = _attestation(out, record)
        except (KeyError, TypeError, ValueError) as err:
            raise InputError(
                f"the manifest record of {filename!r} is broken: {err!r}", hint=_HINT
            ) from err
        if attestation is not None:
            attestations[filename] = attestation
    return Kept(
        wheels=tuple(wheels),
        bases=bases,
        descriptions=descriptions,
        attestations=attestations,
        yanks=yanks,
    )
