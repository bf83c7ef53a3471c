"""``/etc/ld.so.cache``, read as glibc's ld.so reads it, and ``/etc/ld.so.conf``, which ldconfig
read to write it (pure: bytes and text in, entries out).

The loader never reads ``ld.so.conf``: it looks a SONAME up in the cache ldconfig made from it,
and a directory added to the configuration without running ``ldconfig`` is not searched. So
the cache decides; the configuration only tells a user why a library is missed.

Two layouts exist (glibc ``sysdeps/generic/dl-cache.h``), both little- or big-endian as the
machine:

- **old** (``ld.so-1.7.0``): the 11-byte magic, a 32-bit count at offset 12, then entries of
  three 32-bit words (flags, key, value); key and value are offsets into the string table that
  starts right after the entries.
- **new** (``glibc-ld.so.cache1.1``, the only one glibc 2.32 and later write): the 20-byte
  magic and version, 32-bit ``nlibs`` and ``len_strings``, a flags byte, padding, a 32-bit
  extension offset and three unused words (48 bytes), then entries of 24 bytes (32-bit flags,
  key, value, osversion, 64-bit hwcap); key and value are offsets from the start of this
  header. An old cache may carry a new one after its entries (aligned to 8 bytes): the new one
  is then read, as ld.so does.

An entry's flags name the ABI of the library (``FLAG_ELF_LIBC6 | FLAG_X8664_LIB64`` = 0x0303 on
x86-64, ``| FLAG_AARCH64_LIB64`` = 0x0a03 on arm64); ld.so takes only entries of its own ABI
(``_dl_cache_check_flags``). Entries with a hardware-capability subdirectory (``hwcap`` not 0)
come before the plain one of the same name; either loads, so the plain one is kept when both
exist.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase

__all__ = ["NEW_MAGIC", "OLD_MAGIC", "LdCache", "conf_dirs", "parse_cache"]

OLD_MAGIC = b"ld.so-1.7.0"
NEW_MAGIC = b"glibc-ld.so.cache1.1"
_OLD_HEADER = 16
_NEW_HEADER = 48
_MAX_ENTRIES = 1 << 20
# ABI flags per machine (glibc sysdeps/generic/ldconfig.h and dl-cache.h).
ABI_FLAGS: Mapping[str, int] = {"x86_64": 0x0303, "aarch64": 0x0A03, "ppc64le": 0x0503}


@dataclass(frozen=True, slots=True, kw_only=True)
class LdCache:
    """The cache's entries of one ABI: SONAME -> path, and how it was read."""

    entries: Mapping[str, str]
    layout: str  # "glibc-ld.so.cache1.1" or "ld.so-1.7.0"
    total: int  # entries of every ABI in the file

    def where(self, soname: str) -> str | None:
        return self.entries.get(soname)


def parse_cache(data: bytes, *, machine: str = "x86_64") -> LdCache | None:
    """The entries of ``machine``'s ABI in the cache ``data``; None for a file that is neither
    layout (or cut short)."""
    flags = ABI_FLAGS.get(machine)
    if data.startswith(NEW_MAGIC):
        return _new(data, 0, flags)
    if not data.startswith(OLD_MAGIC) or len(data) < _OLD_HEADER:
        return None
    order = _order_of_old(data)
    (count,) = struct.unpack_from(order + "I", data, 12)
    if count > _MAX_ENTRIES:
        return None
    after = _OLD_HEADER + count * 12
    following = after + (-after % 8)
    if data[following : following + len(NEW_MAGIC)] == NEW_MAGIC:
        return _new(data, following, flags)
    return _old(data, order, count, flags)


def _order_of_old(data: bytes) -> str:
    """The byte order of an old cache: the one whose count fits the file."""
    little = struct.unpack_from("<I", data, 12)[0]
    return "<" if _OLD_HEADER + little * 12 <= len(data) else ">"


def _old(data: bytes, order: str, count: int, flags: int | None) -> LdCache | None:
    strings = _OLD_HEADER + count * 12
    if strings > len(data):
        return None
    found: dict[str, str] = {}
    for index in range(count):
        kind, key, value = struct.unpack_from(order + "iII", data, _OLD_HEADER + index * 12)
        if flags is None or kind == flags:
            found.setdefault(_text(data, strings + key), _text(data, strings + value))
    return LdCache(entries=found, layout=OLD_MAGIC.decode(), total=count)


def _new(data: bytes, start: int, flags: int | None) -> LdCache | None:
    if len(data) < start + _NEW_HEADER:
        return None
    endian = data[start + 28] & 0x3  # 0 unset (the writer's own), 1 invalid, 2 little, 3 big
    order = ">" if endian == 3 else "<"
    count, _length = struct.unpack_from(order + "II", data, start + 20)
    if count > _MAX_ENTRIES or start + _NEW_HEADER + count * 24 > len(data):
        return None
    plain: dict[str, str] = {}
    capable: dict[str, str] = {}
    for index in range(count):
        at = start + _NEW_HEADER + index * 24
        kind, key, value, _os, hwcap = struct.unpack_from(order + "iIIIQ", data, at)
        if flags is not None and kind != flags:
            continue
        name, path = _text(data, start + key), _text(data, start + value)
        (capable if hwcap else plain).setdefault(name, path)
    return LdCache(entries={**capable, **plain}, layout=NEW_MAGIC.decode(), total=count)


def _text(data: bytes, at: int) -> str:
    if at >= len(data):
        return ""
    end = data.find(b"\0", at)
    return data[at : end if end >= 0 else len(data)].decode("utf-8", "replace")


def conf_dirs(
    read: Callable[[str], str | None],
    listdir: Callable[[str], tuple[str, ...]],
    path: str = "/etc/ld.so.conf",
    *,
    budget: int = 64,
) -> tuple[str, ...]:
    """The directories ``ld.so.conf`` names, following ``include`` lines (a glob of files in
    one directory, relative to the including file's) up to ``budget`` files, in order."""
    left = [budget]
    return tuple(dict.fromkeys(_conf(read, listdir, path, left)))


def _conf(
    read: Callable[[str], str | None],
    listdir: Callable[[str], tuple[str, ...]],
    path: str,
    left: list[int],
) -> list[str]:
    left[0] -= 1
    if left[0] < 0:
        return []
    dirs: list[str] = []
    for raw in (read(path) or "").splitlines():
        line = raw.split("#", 1)[0].strip()
        if line.startswith("include"):
            for pattern in line.split()[1:]:
                dirs += _included(read, listdir, pattern, path, left)
        elif line.startswith("/"):
            dirs.append(line.split("=", 1)[0].rstrip("/") or "/")
    return dirs


def _included(
    read: Callable[[str], str | None],
    listdir: Callable[[str], tuple[str, ...]],
    pattern: str,
    conf: str,
    left: list[int],
) -> list[str]:
    if not pattern.startswith("/"):
        pattern = f"{conf.rpartition('/')[0]}/{pattern}"
    folder, _, glob = pattern.rpartition("/")
    dirs: list[str] = []
    for name in sorted(listdir(folder)):
        if fnmatchcase(name, glob):
            dirs += _conf(read, listdir, f"{folder}/{name}", left)
    return dirs
