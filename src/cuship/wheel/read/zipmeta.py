"""A fast path to one wheel's ``*.dist-info/METADATA``, and to its member names, from the
wheel's bytes in memory.

:mod:`zipfile` builds a ``ZipInfo`` object per member, which dominates the cost of indexing
thousands of small wheels. This reads the central directory with :mod:`struct`, stops at the
one member it needs and checks its CRC. Anything unusual (zip64, encryption, a method other
than stored/deflate, a prefix before the archive, no or several METADATA members, a member
larger than :data:`METADATA_LIMIT`) returns None, and the caller uses :mod:`zipfile`, which
also words the error for a broken archive.

Inflation is bounded: never more than ``METADATA_LIMIT + 1`` bytes are produced, whatever the
archive claims, so a small wheel whose METADATA inflates to gigabytes costs megabytes.
"""

from __future__ import annotations

import struct
import zlib
from typing import NamedTuple

__all__ = [
    "METADATA_LIMIT",
    "Listing",
    "Member",
    "looks_shared",
    "member_at",
    "member_names",
    "metadata_fast",
]

METADATA_LIMIT = 8 * 1024 * 1024
"""The largest METADATA the index accepts (PyPI's largest are a few hundred kB)."""

_EOCD = struct.Struct("<4s4H2LH")
_CENTRAL = struct.Struct("<4s6H3L5H2L")
# size, and name, extra and comment lengths, 24 bytes into an entry
_TAIL = struct.Struct("<L3H")
_LOCAL = struct.Struct("<4s5H3L2H")
_SUFFIX = b".dist-info/METADATA"
_ROOTS = (0x2F, 0x5C)  # a name starting with "/" or "\\"


Listing = tuple[dict[bytes, int], list[tuple[bytes, int]]]
"""The members of an archive as its central directory lists them: each name (undecoded) with
its declared size, and each ``*.dist-info/RECORD`` with where its entry starts."""


class Member(NamedTuple):
    """The METADATA member: its name in the archive and its (inflated) bytes."""

    name: str
    data: bytes


class _Entry(NamedTuple):
    name: str
    flags: int
    method: int
    crc: int
    compressed: int
    size: int
    local: int


def _central_directory(data: bytes) -> tuple[int, int] | None:
    """(offset, entry count) of the central directory, or None when zipfile should decide."""
    end = data.rfind(b"PK\x05\x06", max(0, len(data) - 65557))
    if end < 0 or end + _EOCD.size > len(data):
        return None
    _sig, _disk, _cd_disk, _here, count, size, offset, _comment = _EOCD.unpack_from(data, end)
    if count == 0xFFFF or offset == 0xFFFFFFFF or offset + size != end:
        return None  # zip64, or bytes before the archive: leave it to zipfile
    return offset, count


def looks_shared(name: str) -> bool:
    """A member that is a shared object (``x.so``, ``libfoo.so.1``): its ELF must be read."""
    base = name.rsplit("/", 1)[-1]
    return base.endswith(".so") or ".so." in base


def _looks_shared(name: bytes) -> bool:
    base = name.rsplit(b"/", 1)[-1]
    return base.endswith(b".so") or b".so." in base


def _suspect(data: bytes, start: int, end: int) -> bool:
    """Whether the name at ``data[start:end]`` may leave the archive's root: it starts with a
    slash or backslash or a drive (``C:``), or holds ``..`` or a backslash anywhere."""
    return end > start and (
        data[start] in _ROOTS
        or data.find(b"..", start, end) >= 0
        or data.find(b"\\", start, end) >= 0
        or (end > start + 1 and data[start + 1] == 0x3A)
    )


def _find(
    data: bytes,
    offset: int,
    count: int,
    seen: list[bool] | None = None,
    rooted: list[bool] | None = None,
    listing: Listing | None = None,
) -> _Entry | None:
    """The central directory entry of the single METADATA; ``seen`` gets True when a member
    looks like a shared object, ``rooted`` when a name may leave the root (:func:`_suspect`);
    ``listing`` gets each member's name, size and entry offset (:data:`Listing`)."""
    found = None
    size = len(data)
    tail = _TAIL.unpack_from
    # Names are read only where needed: a shared object's name holds ".so", and without those
    # bytes from the directory on, no name need be read for it.
    look = seen is not None and not seen and data.find(b".so", offset) >= 0
    for _ in range(count):
        if offset + _CENTRAL.size > size or not data.startswith(b"PK\x01\x02", offset):
            return None
        inflated, name_len, extra_len, comment_len = tail(data, offset + 24)
        start = offset + 46
        end = start + name_len
        if listing is not None:
            name = data[start:end]
            listing[0][name] = inflated
            if name.endswith(b".dist-info/RECORD"):
                listing[1].append((name, offset))
        if rooted is not None and not rooted and _suspect(data, start, end):
            rooted.append(True)
        if look and seen is not None and _looks_shared(data[start:end]):
            seen.append(True)
            look = False
        if data.endswith(_SUFFIX, start, end) and data.count(b"/", start, end) == 1:
            if found is not None:
                return None
            fields = _CENTRAL.unpack_from(data, offset)
            found = _Entry(
                name=data[start:end].decode("utf-8", errors="replace"),
                flags=fields[3],
                method=fields[4],
                crc=fields[7],
                compressed=fields[8],
                size=fields[9],
                local=fields[16],
            )
        offset = end + extra_len + comment_len
    return found


def member_names(data: bytes) -> list[str] | None:
    """The names of every member, from the central directory; None when zipfile should read
    the archive (zip64, a prefix, a directory that does not parse)."""
    directory = _central_directory(data)
    if directory is None:
        return None
    offset, count = directory
    names: list[str] = []
    for _ in range(count):
        if data[offset : offset + 4] != b"PK\x01\x02" or offset + _CENTRAL.size > len(data):
            return None
        fields = _CENTRAL.unpack_from(data, offset)
        name_len, extra_len, comment_len = fields[10], fields[11], fields[12]
        names.append(data[offset + 46 : offset + 46 + name_len].decode("utf-8", errors="replace"))
        offset += 46 + name_len + extra_len + comment_len
    return names


def _inflate(raw: bytes, method: int) -> bytes | None:
    """The member's bytes, at most ``METADATA_LIMIT``; None when broken or over the limit."""
    if method == 0:
        return raw if len(raw) <= METADATA_LIMIT else None
    inflater = zlib.decompressobj(-15)
    try:
        content = inflater.decompress(raw, METADATA_LIMIT + 1)
    except zlib.error:
        return None
    if len(content) > METADATA_LIMIT or not inflater.eof:
        return None
    return content


def metadata_fast(
    data: bytes,
    shared: list[bool] | None = None,
    suspect: list[bool] | None = None,
    listing: Listing | None = None,
) -> Member | None:
    """The METADATA member, or None when the slow path must decide. ``shared``: an empty list
    that gets True when a member looks like a shared object; ``suspect``: one that gets True
    when a member name may leave the archive's root (``..``, a backslash, a colon, a leading
    slash: the caller then checks each name); ``listing``: an empty list that gets every
    member (:data:`Listing`, for :func:`member_at`). Only when a member is returned do they
    cover every member."""
    directory = _central_directory(data)
    if directory is None:
        return None
    entry = _find(data, *directory, shared, suspect, listing)
    if entry is None or entry.size > METADATA_LIMIT:
        return None
    local = entry.local
    if entry.flags & 0x1 or entry.method not in (0, 8) or local + _LOCAL.size > len(data):
        return None
    if data[local : local + 4] != b"PK\x03\x04":
        return None
    name_len, extra_len = _LOCAL.unpack_from(data, local)[9:11]
    start = local + _LOCAL.size + name_len + extra_len
    content = _inflate(data[start : start + entry.compressed], entry.method)
    if content is None or zlib.crc32(content) != entry.crc:
        return None
    return Member(entry.name, content)


def member_at(data: bytes, entry: int, limit: int) -> bytes | None:
    """The member whose central directory entry starts at ``entry`` (a :data:`Listing`
    offset), inflated and checked against its CRC; None when zipfile should read it (encrypted,
    stored with another method, larger than ``limit``, not inflating to its CRC)."""
    fields = _CENTRAL.unpack_from(data, entry)
    found = _Entry("", fields[3], fields[4], fields[7], fields[8], fields[9], fields[16])
    return _member_bytes(data, found, limit)


def _member_bytes(data: bytes, entry: _Entry, limit: int) -> bytes | None:
    """The member ``entry`` inflated (at most ``limit`` bytes) and checked against its CRC; None
    when zipfile should decide."""
    local = entry.local
    if entry.size > limit or entry.flags & 0x1 or entry.method not in (0, 8):
        return None
    if local + _LOCAL.size > len(data) or not data.startswith(b"PK\x03\x04", local):
        return None
    name_len, extra_len = _LOCAL.unpack_from(data, local)[9:11]
    start = local + _LOCAL.size + name_len + extra_len
    raw = data[start : start + entry.compressed]
    if entry.method == 0:
        content: bytes | None = raw
    else:
        inflater = zlib.decompressobj(-15)
        try:
            content = inflater.decompress(raw, limit + 1)
        except zlib.error:
            return None
        if not inflater.eof:
            return None
    if content is None or len(content) != entry.size or zlib.crc32(content) != entry.crc:
        return None
    return content
