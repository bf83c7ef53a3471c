"""A fast path to one wheel's ``*.dist-info/METADATA`` from the wheel's bytes in memory.

:mod:`zipfile` builds a ``ZipInfo`` object per member, which dominates the cost of indexing
thousands of small wheels. This reads the central directory with :mod:`struct`, stops at the
one member it needs and checks its CRC. Anything unusual (zip64, encryption, a method other
than stored/deflate, a prefix before the archive, no or several METADATA members) returns None,
and the caller uses :mod:`zipfile`, which also words the error for a broken archive.
"""

from __future__ import annotations

import struct
import zlib

__all__ = ["metadata_fast"]

_EOCD = struct.Struct("<4s4H2LH")
_CENTRAL = struct.Struct("<4s6H3L5H2L")
_LOCAL = struct.Struct("<4s5H3L2H")
_SUFFIX = b".dist-info/METADATA"


def _central_directory(data: bytes) -> tuple[int, int] | None:
    """(offset, entry count) of the central directory, or None when zipfile should decide."""
    end = data.rfind(b"PK\x05\x06", max(0, len(data) - 65557))
    if end < 0 or end + _EOCD.size > len(data):
        return None
    _sig, _disk, _cd_disk, _here, count, size, offset, _comment = _EOCD.unpack_from(data, end)
    if count == 0xFFFF or offset == 0xFFFFFFFF or offset + size != end:
        return None  # zip64, or bytes before the archive: leave it to zipfile
    return offset, count


def _find(data: bytes, offset: int, count: int) -> tuple[int, int, int, int, int] | None:
    """(flags, method, crc, compressed size, local header offset) of the single METADATA."""
    found = None
    for _ in range(count):
        if data[offset : offset + 4] != b"PK\x01\x02":
            return None
        fields = _CENTRAL.unpack_from(data, offset)
        name_len, extra_len, comment_len = fields[10], fields[11], fields[12]
        name = data[offset + 46 : offset + 46 + name_len]
        if name.endswith(_SUFFIX) and name.count(b"/") == 1:
            if found is not None:
                return None
            found = (fields[3], fields[4], fields[7], fields[8], fields[16])
        offset += 46 + name_len + extra_len + comment_len
    return found


def metadata_fast(data: bytes) -> bytes | None:
    """The METADATA member's bytes, or None when the slow path must decide."""
    directory = _central_directory(data)
    if directory is None:
        return None
    member = _find(data, *directory)
    if member is None:
        return None
    flags, method, crc, size, local = member
    if flags & 0x1 or method not in (0, 8) or data[local : local + 4] != b"PK\x03\x04":
        return None
    name_len, extra_len = _LOCAL.unpack_from(data, local)[9:11]
    start = local + _LOCAL.size + name_len + extra_len
    raw = data[start : start + size]
    try:
        content = zlib.decompress(raw, -15) if method == 8 else raw
    except zlib.error:
        return None
    return content if zlib.crc32(content) == crc else None
