"""A wheel's RECORD held to its archive: the same members, the same sizes, the same hashes.

The wheel spec lists every file of a wheel in ``*.dist-info/RECORD`` with its hash and size
(RECORD itself, and its signatures ``RECORD.jws`` / ``RECORD.p7s``, without). pip refuses a wheel
without RECORD; a wheel whose RECORD disagrees with its contents was changed after it was built
(a ``.so`` patched, a file dropped or added by hand) and installs files nobody vouched for.

The listing check needs only the central directory (names and declared sizes) and RECORD
itself; a member's hash is checked where its bytes are inflated anyway (METADATA, the shared
objects the inspection reads), never by inflating a member just for this.
"""

from __future__ import annotations

import base64
import csv
import hashlib
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from cuship.errors import InputError

__all__ = [
    "RECORD_LIMIT",
    "SIGNATURES",
    "RecordMismatch",
    "RecordRow",
    "check_digest",
    "check_listing",
    "hasher",
    "missing_record",
    "parse_record",
    "record_name",
]

RECORD_LIMIT = 32 * 1024 * 1024
"""The largest RECORD read (torch's is about 2 MB)."""
SIGNATURES = ("RECORD.jws", "RECORD.p7s")
_HINT = (
    "rebuild the wheel with its build backend; a tool that changes files after the build "
    "(patchelf, a hand-made zip) must rewrite RECORD, as auditwheel and cuship repair/retag do"
)
# Digests RECORD may name: hashlib's guaranteed ones, less those the wheel spec forbids
_ALGORITHMS = frozenset(hashlib.algorithms_guaranteed) - {"md5", "sha1"}


class RecordMismatch(InputError):
    """A wheel whose RECORD is missing, unreadable, or disagrees with the archive."""


class RecordRow(NamedTuple):
    """What RECORD says of one file: its hash (algorithm and urlsafe base64 digest, both
    empty when not given) and its size (None when not given)."""

    algorithm: str
    digest: str
    size: int | None


def record_name(metadata: str) -> str:
    """The RECORD beside the member ``metadata`` (``x-1.0.dist-info/METADATA``)."""
    return metadata.rpartition("/")[0] + "/RECORD"


def missing_record(wheel: str, record: str) -> RecordMismatch:
    """The error for a wheel without its RECORD (pip refuses such a wheel too)."""
    return RecordMismatch(
        f"{wheel!r} has no {record!r}: its files are not listed (pip refuses such a wheel)",
        hint=_HINT,
    )


def parse_record(data: bytes, wheel: str, record: str) -> dict[str, RecordRow]:
    """RECORD's rows by path; a RECORD that is not UTF-8 CSV of ``path,hash,size`` rows is a
    :class:`RecordMismatch`."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise RecordMismatch(
            f"{wheel!r}: {record!r} is not UTF-8 ({err.reason} at byte {err.start})", hint=_HINT
        ) from err
    rows: dict[str, RecordRow] = {}
    try:
        for number, fields in enumerate(csv.reader(text.splitlines()), start=1):
            if fields:
                rows[fields[0]] = _row(fields, wheel, record, number)
    except csv.Error as err:
        raise RecordMismatch(f"{wheel!r}: {record!r} is not CSV: {err}", hint=_HINT) from err
    return rows


def _row(fields: list[str], wheel: str, record: str, number: int) -> RecordRow:
    where = f"{wheel!r}: {record!r} line {number}"
    if len(fields) != 3:
        raise RecordMismatch(
            f"{where} has {len(fields)} fields, not 3 (path,hash,size)", hint=_HINT
        )
    _path, hashed, size_text = fields
    algorithm, _eq, digest = hashed.partition("=")
    if hashed and (not digest or algorithm not in _ALGORITHMS):
        raise RecordMismatch(f"{where}: the hash {hashed!r} is not ALGORITHM=DIGEST", hint=_HINT)
    if size_text and not size_text.isdigit():
        raise RecordMismatch(f"{where}: the size {size_text!r} is not a number", hint=_HINT)
    return RecordRow(algorithm, digest, int(size_text) if size_text else None)


def check_listing(
    rows: Mapping[str, RecordRow], members: Iterable[tuple[str, int]], wheel: str, record: str
) -> None:
    """Refuse (:class:`RecordMismatch`) when a member of the archive (name, declared size) is
    not in RECORD, when RECORD names a file the archive lacks, or when a size disagrees.
    Directory entries, RECORD and its signatures need no row."""
    folder = record.rpartition("/")[0] + "/"
    unlisted = {record, *(folder + name for name in SIGNATURES)}
    seen: set[str] = set()
    for name, size in members:
        if name.endswith("/"):
            continue
        seen.add(name)
        row = rows.get(name)
        if row is None:
            if name in unlisted:
                continue
            raise RecordMismatch(
                f"{wheel!r}: the member {name!r} is not listed in {record!r}", hint=_HINT
            )
        if row.size is not None and row.size != size and name != record:
            raise RecordMismatch(
                f"{wheel!r}: {record!r} says {name!r} is {row.size} bytes, the archive "
                f"holds {size}",
                hint=_HINT,
            )
    for name in rows:
        if name not in seen and name not in unlisted:
            raise RecordMismatch(
                f"{wheel!r}: {record!r} lists {name!r}, which the archive does not hold",
                hint=_HINT,
            )


def hasher(row: RecordRow | None) -> hashlib._Hash | None:
    """A fresh hash object of the algorithm ``row`` names; None when it gives no hash."""
    if row is None or not row.algorithm:
        return None
    return hashlib.new(row.algorithm)


def check_digest(row: RecordRow | None, digest: bytes, name: str, wheel: str, record: str) -> None:
    """Refuse (:class:`RecordMismatch`) when ``digest`` (of the member ``name``, hashed with
    :func:`hasher` of ``row``) is not the one RECORD gives."""
    if row is None or not row.algorithm:
        return
    encoded = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    if encoded != row.digest.rstrip("="):
        raise RecordMismatch(
            f"{wheel!r}: {name!r} has {row.algorithm}={encoded}, but {record!r} says "
            f"{row.algorithm}={row.digest} (the file changed after RECORD was written)",
            hint=_HINT,
        )
