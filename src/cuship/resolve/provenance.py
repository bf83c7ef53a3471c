"""What an installed package is: the ``cuship.json`` that ``cuship.backend`` puts in its wheel.

Every wheel the backend hands to a frontend carries ``<name>-<version>.dist-info/cuship.json``
(listed in RECORD with its hash): for a prebuilt wheel its file name, sha256, URL, the index it
was resolved from, its local label and why it was chosen; for a source build why no prebuilt
wheel was taken. The wheel itself carries the sdist's version (pip demands it), so this file is
the one place that says which prebuilt file it was. :func:`read_installed` reads it back.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from collections.abc import Mapping
from dataclasses import fields
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from cuship import _fs, _read
from cuship._record import frozen
from cuship.errors import InputError, UsageError
from cuship.wheel.read.members import check_members, copy_into, member_limits, read_member
from cuship.wheel.write.retag import find_dist_info, record_hash

__all__ = ["FILENAME", "Handover", "add_to_wheel", "read_dist", "read_installed"]

FILENAME = "cuship.json"
SCHEMA = 1
Kind = Literal["prebuilt", "source"]
_SIGNATURES = ("RECORD.jws", "RECORD.p7s")


@frozen
class Handover:
    """The backend's hand-over record (``cuship.json`` in the installed dist-info): where the
    wheel ``cuship.backend`` handed to the frontend came from, and why. One of three provenance
    records kept apart by name: :class:`cuship.provenance.Provenance` is the code a run imported,
    :class:`cuship.doctor.model.InstallOrigin` what doctor reads of an installed distribution."""

    name: str
    version: str  # the version installed: the sdist's
    kind: Kind  # "prebuilt": a verified download; "source": built by the real backend
    why: str
    filename: str | None = None  # the prebuilt file as the index lists it (with its label)
    sha256: str | None = None  # of that file, verified on download
    url: str | None = None  # where it was downloaded from
    index: str | None = None  # the index (or url template) it was resolved from
    label: str | None = None  # its local version label, e.g. "cu130"
    backend: str | None = None  # the real backend (source builds)
    cuship: str | None = None  # the cuship version that handed it over

    def to_json(self) -> dict[str, object]:
        return {"schema": SCHEMA, **{f.name: getattr(self, f.name) for f in fields(self)}}

    def to_bytes(self) -> bytes:
        """The text of cuship.json."""
        return (json.dumps(self.to_json(), indent=2, sort_keys=True) + "\n").encode()

    @classmethod
    def from_json(cls, doc: Any, source: str) -> Handover:
        """Read ``doc`` (parsed cuship.json); a malformed one is an :class:`InputError`."""
        if not isinstance(doc, Mapping) or doc.get("kind") not in ("prebuilt", "source"):
            raise InputError(
                f"{source!r} is not a cuship provenance record (kind prebuilt or source)",
                hint="reinstall the package from its sdist or wheel",
            )
        values: dict[str, Any] = {}
        for key in (f.name for f in fields(cls)):
            value = doc.get(key)
            if value is not None and not isinstance(value, str):
                raise InputError(f"{source!r}: {key!r} must be a string, got {value!r}")
            values[key] = value
        if not values["name"] or values["version"] is None or values["why"] is None:
            raise InputError(f"{source!r} lacks name, version or why", hint="reinstall it")
        return cls(**values)


def _rows(record: bytes, skip: frozenset[str]) -> list[list[str]]:
    reader = csv.reader(io.StringIO(record.decode("utf-8")))
    return [row for row in reader if row and row[0] not in skip]


def add_to_wheel(wheel: Path, provenance: Handover, *, out_dir: Path) -> Path:
    """A copy of ``wheel`` in ``out_dir`` whose .dist-info holds ``cuship.json`` (in RECORD).

    Written to a temporary file and renamed into place; a cuship.json already there is replaced.
    """
    # 0600, the mode this wheel has always been written with (it goes to the frontend asking)
    with _fs.new_file(out_dir, wheel.name, mode=0o600) as temp:
        _rewrite(wheel, temp, provenance)
    return out_dir / wheel.name


def _rewrite(wheel: Path, dest: Path, provenance: Handover) -> None:
    """``wheel`` copied into ``dest`` member by member, each streamed and bounded
    (:mod:`cuship.wheel.read.members`: memory stays a few MiB whatever the members inflate to)."""
    data = provenance.to_bytes()
    try:
        with _read.archive(wheel) as old, zipfile.ZipFile(dest, "w") as new:
            root = find_dist_info(old, wheel)
            _same_project(wheel, root, provenance.name)
            ours, record = f"{root}/{FILENAME}", f"{root}/RECORD"
            dropped = {ours, record, *(f"{root}/{s}" for s in _SIGNATURES)}
            limits = member_limits()
            check_members(old.infolist(), wheel.name, limits)
            for info in old.infolist():
                if info.filename not in dropped:
                    copy_into(old, new, info, wheel.name, limits)
            new.writestr(zipfile.ZipInfo(ours, date_time=(1980, 1, 1, 0, 0, 0)), data)
            listed = read_member(old, old.getinfo(record), wheel.name, limits)
            rows = _rows(listed, frozenset(dropped))
            rows += [[ours, record_hash(data), str(len(data))], [record, "", ""]]
            text = io.StringIO()
            csv.writer(text, lineterminator="\n").writerows(rows)
            new.writestr(old.getinfo(record), text.getvalue().encode())
    except (zipfile.BadZipFile, EOFError, UnicodeDecodeError) as err:
        raise InputError(f"{str(wheel)!r} is not a readable wheel: {err}") from err


def _same_project(wheel: Path, dist_info: str, name: str) -> None:
    """The wheel is ``name``'s: its file name and its ``.dist-info`` both say so (a prebuilt
    wheel of another project would install that project under this one's name)."""
    from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

    want = canonicalize_name(name)
    try:
        named = canonicalize_name(parse_wheel_filename(wheel.name)[0])
    except InvalidWheelFilename:
        named = None
    said = canonicalize_name(dist_info.removesuffix(".dist-info").rpartition("-")[0])
    if named != want or said != want:
        other = said if said != want else named
        raise InputError(
            f"{wheel.name!r} is not a wheel of {name!r}: its "
            f"{'.dist-info' if said != want else 'file name'} names the project {other!r}",
            hint="the index serves another project's wheel under this name; fix the index",
        )


def read_dist(dist: metadata.Distribution) -> Handover | None:
    """The provenance an installed distribution carries; None when cuship did not hand it over."""
    text = _read.dist_text(dist, FILENAME)
    if text is None:
        return None
    source = f"{_read.dist_field(dist, 'Name')} {_read.dist_field(dist, 'Version')}: {FILENAME}"
    try:
        doc = _read.loads(text)
    except _read.JsonRefused as err:
        raise InputError(f"{source!r} {err.problem}", hint="reinstall the package") from err
    return Handover.from_json(doc, source)


def read_installed(name: str) -> Handover | None:
    """The provenance of the installed distribution ``name`` (None: it carries none).

    Not installed for this interpreter: a :class:`UsageError` naming it.
    """
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError as err:
        raise UsageError(
            f"{name!r} is not installed for this interpreter",
            hint="check the name with `pip list`, or run the Python it is installed in",
        ) from err
    return read_dist(dist)
