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

from cuship import _read
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
    "record_agrees",
    "record_hash",
    "record_name",
    "urlsafe_digest",
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


def urlsafe_digest(digest: bytes) -> str:
    """A digest as RECORD writes it: urlsafe base64 without padding."""
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def record_hash(data: bytes) -> str:
    """RECORD's hash field of ``data``: ``sha256=`` and :func:`urlsafe_digest`."""
    return "sha256=" + urlsafe_digest(hashlib.sha256(data).digest())


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
            if not fields:
                continue
            if len(fields) != 3:
                raise _bad_row(wheel, record, number, f"has {len(fields)} fields, not 3")
            path, hashed, size = fields
            algorithm, _eq, digest = hashed.partition("=")
            if hashed and (not digest or algorithm not in _ALGORITHMS):
                raise _bad_row(wheel, record, number, f"the hash {hashed!r} is not ALGO=DIGEST")
            rows[path] = RecordRow(algorithm, digest, _size(size, wheel, record, number))
    except csv.Error as err:
        raise RecordMismatch(f"{wheel!r}: {record!r} is not CSV: {err}", hint=_HINT) from err
    return rows


def _size(size: str, wheel: str, record: str, number: int) -> int | None:
    """A row's size: ASCII digits (``"²"`` is no size, though ``str.isdigit`` says so)."""
    if not size:
        return None
    try:
        return _read.integer(size, "the size")
    except _read.Refused:
        raise _bad_row(wheel, record, number, f"the size {size!r} is not a number") from None


def _bad_row(wheel: str, record: str, number: int, problem: str) -> RecordMismatch:
    return RecordMismatch(
        f"{wheel!r}: {record!r} line {number} {problem} (rows are path,hash,size)", hint=_HINT
    )


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
    encoded = urlsafe_digest(digest)
    if encoded != row.digest.rstrip("="):
        raise RecordMismatch(
            f"{wheel!r}: {name!r} has {row.algorithm}={encoded}, but {record!r} says "
            f"{row.algorithm}={row.digest} (the file changed after RECORD was written)",
            hint=_HINT,
        )


def record_agrees(
    content: bytes, members: Mapping[bytes, int], record: str, name: str, data: bytes
) -> bool:
    """Whether RECORD (``content``) plainly agrees with the archive's ``members`` (each name,
    undecoded, with its declared size) and with the member ``name`` whose bytes are ``data``
    (METADATA): the common case, every member listed with its size and RECORD's own row last,
    answered with a few operations on whole lists (an index of 50,000 small wheels asks it of
    each). False says only "not plainly": :func:`parse_record` and :func:`check_listing` then
    decide, and word what disagrees."""
    if b'"' in content:  # quoted paths: the csv module reads them
        return False
    # Three fields a row, split at once (a comma in a path shifts them: then not plainly)
    fields = b",".join(content.splitlines()).split(b",")
    own, checked = record.encode(), name.encode()
    paths = fields[0::3]
    if len(fields) % 3 or own not in paths or checked not in paths:
        return False
    at = 3 * paths.index(own)
    if fields[at + 1 : at + 3] != [b"", b""] or fields[3 * paths.index(checked) + 1] != (
        record_hash(data).encode()
    ):
        return False
    del fields[at : at + 3]
    try:
        expected = dict(zip(fields[0::3], map(int, fields[2::3]), strict=True))
    except ValueError:  # a size not given, or not a number
        return False
    return len(expected) == len(paths) - 1 and expected == {
        member: size
        for member, size in members.items()
        if member != own and not member.endswith(b"/")  # a directory entry needs no row
    }
