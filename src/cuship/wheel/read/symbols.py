"""The dynamic symbols a shared object defines, looked up by name the way glibc's ld.so does.

A library can export 100,000 symbols (torch's ``libtorch_cpu.so``); binding an extension's
few thousand imports must not read them all. As ld.so does, a name is looked up through the
object's hash table: ``.gnu.hash`` (a Bloom filter, then one bucket's chain), else the SysV
``.hash``, else (objects that carry neither, such as the tests' synthetic ones) a table of
the defined names built once. Only the entries the chain names are read from the file (an
mmap), so a lookup costs a few page reads.

A candidate counts as ld.so counts it (glibc ``elf/dl-lookup.c``, ``do_lookup_x`` and
``check_match``): defined (``st_shndx`` not SHN_UNDEF) with a value (or TLS), of a type code
may bind to (no type, object, function, common, TLS, GNU indirect function), bound globally,
weakly or uniquely; and of the version asked: the version's name in ``.gnu.version_d``, or,
for an unversioned definition (index 0 or 1) that is not hidden, any version. An unversioned
reference takes any definition that is not hidden. An object without ``.gnu.version`` matches
every version. :attr:`SymbolTable.versions` are the names ``.gnu.version_d`` defines, which a
version need (``GLIBC_2.34`` of ``libc.so.6``) is checked against (glibc ``elf/dl-version.c``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from cuship.wheel.read.elf import (
    Buffer,
    _bytes,
    _cstring,
    _Format,
    _format,
    _reading,
    _Section,
    _section_table,
)

__all__ = ["SymbolTable", "gnu_hash", "symbol_table", "sysv_hash"]

_SHT_HASH, _SHT_DYNSYM = 5, 11
_SHT_GNU_HASH, _SHT_GNU_VERDEF, _SHT_GNU_VERSYM = 0x6FFFFFF6, 0x6FFFFFFD, 0x6FFFFFFF
_HIDDEN = 0x8000
_BINDABLE_TYPES = frozenset({0, 1, 2, 5, 6, 10})  # NOTYPE OBJECT FUNC COMMON TLS GNU_IFUNC
_BINDABLE_BINDINGS = frozenset({1, 2, 10})  # GLOBAL WEAK GNU_UNIQUE
_STT_TLS = 6


def gnu_hash(name: bytes) -> int:
    """The hash of ``.gnu.hash`` (Bernstein's, ``h * 33 + c`` from 5381, 32 bits)."""
    h = 5381
    for byte in name:
        h = (h * 33 + byte) & 0xFFFFFFFF
    return h


def sysv_hash(name: bytes) -> int:
    """The hash of the SysV ``.hash`` table (the ELF gABI's ``elf_hash``)."""
    h = 0
    for byte in name:
        h = ((h << 4) + byte) & 0xFFFFFFFF
        g = h & 0xF0000000
        if g:
            h ^= g >> 24
        h &= ~g & 0xFFFFFFFF
    return h


@dataclass(frozen=True, slots=True)
class _GnuHash:
    """A ``.gnu.hash`` section's header, read once per table: where its Bloom words, buckets
    and chain start, and the struct layouts to read them (a lookup is a few reads, not a
    header parse)."""

    nbuckets: int
    symoffset: int
    bloom_size: int
    shift: int
    bloom_at: int
    buckets_at: int
    chain_at: int
    bits: int  # of one Bloom word
    word: struct.Struct  # one Bloom word
    u32: struct.Struct


def _gnu_header(data: Buffer, fmt: _Format, section: _Section) -> _GnuHash | None:
    """None when the table is empty (no bucket or no Bloom word): nothing is found in it."""
    order = "<" if fmt.little else ">"
    word = struct.Struct(order + ("Q" if fmt.bits == 64 else "I"))
    nbuckets, symoffset, bloom_size, shift = struct.unpack_from(
        order + "IIII", data, section.offset
    )
    if nbuckets == 0 or bloom_size == 0:
        return None
    bloom_at = section.offset + 16
    buckets_at = bloom_at + bloom_size * word.size
    return _GnuHash(
        nbuckets=nbuckets,
        symoffset=symoffset,
        bloom_size=bloom_size,
        shift=shift,
        bloom_at=bloom_at,
        buckets_at=buckets_at,
        chain_at=buckets_at + nbuckets * 4,
        bits=word.size * 8,
        word=word,
        u32=struct.Struct(order + "I"),
    )


@dataclass(slots=True)
class SymbolTable:
    """One object's dynamic symbol table, open for lookups (see the module)."""

    data: Buffer
    fmt: _Format
    dynsym: _Section
    strings: _Section
    versym: _Section | None
    gnu: _Section | None
    sysv: _Section | None
    versions: frozenset[str] = frozenset()  # the names .gnu.version_d defines
    _version_names: dict[int, str] = field(default_factory=dict)  # index -> name
    _linear: dict[bytes, list[int]] | None = None
    _gnu_head: _GnuHash | None = None  # read on the first lookup (see _gnu_read)
    _gnu_read: bool = False

    @property
    def versioned(self) -> bool:
        """Whether the object carries ``.gnu.version`` (else any version matches)."""
        return self.versym is not None

    def defines(self, name: str, version: str | None = None) -> bool:
        """Whether the object defines ``name`` in a form a reference of ``version`` (None: an
        unversioned reference) binds to."""
        raw = name.encode()
        return self.defines_raw(raw, version, gnu_hash(raw))

    def defines_raw(self, name: bytes, version: str | None, hashed: int) -> bool:
        """:meth:`defines` of an encoded name whose :func:`gnu_hash` is ``hashed`` (computed
        once for a name looked up in many objects)."""
        found = self._candidates(name, hashed)  # most lookups end at the Bloom filter: []
        return bool(found) and any(self._acceptable(index, version) for index in found)

    # --- the hash tables -------------------------------------------------------------------

    def _candidates(self, name: bytes, hashed: int) -> list[int]:
        if self.gnu is not None:
            return self._gnu_candidates(name, hashed)
        if self.sysv is not None:
            return self._sysv_candidates(name)
        if self._linear is None:
            self._linear = self._defined_names()
        return self._linear.get(name, [])

    def _gnu_candidates(self, name: bytes, h: int) -> list[int]:
        if not self._gnu_read:
            assert self.gnu is not None
            self._gnu_head, self._gnu_read = _gnu_header(self.data, self.fmt, self.gnu), True
        head = self._gnu_head
        if head is None:
            return []
        data, bits = self.data, head.bits
        (bloom,) = head.word.unpack_from(
            data, head.bloom_at + ((h // bits) % head.bloom_size) * (bits // 8)
        )
        mask = (1 << (h % bits)) | (1 << ((h >> head.shift) % bits))
        if bloom & mask != mask:
            return []
        (index,) = head.u32.unpack_from(data, head.buckets_at + (h % head.nbuckets) * 4)
        if index < head.symoffset:
            return []
        found: list[int] = []
        for _ in range(self._count):  # bounded: a damaged chain cannot spin
            (entry,) = head.u32.unpack_from(data, head.chain_at + (index - head.symoffset) * 4)
            if (entry | 1) == (h | 1) and self._name_is(index, name):
                found.append(index)
            if entry & 1:
                break
            index += 1
        return found

    def _sysv_candidates(self, name: bytes) -> list[int]:
        section = self.sysv
        assert section is not None
        nbucket, nchain = self.fmt.unpack("II", self.data, section.offset)
        if nbucket == 0:
            return []
        at = section.offset + 8
        (index,) = self.fmt.unpack("I", self.data, at + (sysv_hash(name) % nbucket) * 4)
        found: list[int] = []
        for _ in range(min(nchain, self._count)):
            if index == 0 or index >= nchain:
                break
            if self._name_is(index, name):
                found.append(index)
            (index,) = self.fmt.unpack("I", self.data, at + (nbucket + index) * 4)
        return found

    def _defined_names(self) -> dict[bytes, list[int]]:
        names: dict[bytes, list[int]] = {}
        table = _bytes(self.data, self.strings)
        for index in range(1, self._count):
            start = self._symbol(index)[0]
            end = table.find(b"\0", start)
            names.setdefault(table[start : end if end >= 0 else len(table)], []).append(index)
        return names

    # --- one symbol -------------------------------------------------------------------------

    @property
    def _count(self) -> int:
        return self.dynsym.size // (24 if self.fmt.bits == 64 else 16)

    def _symbol(self, index: int) -> tuple[int, int, int, int, int]:
        """(st_name, st_info, st_other, st_shndx, st_value) of entry ``index``."""
        if self.fmt.bits == 64:
            name, info, other, shndx, value = self.fmt.unpack(
                "IBBHQ", self.data, self.dynsym.offset + index * 24
            )
        else:
            name, value, _size, info, other, shndx = self.fmt.unpack(
                "IIIBBH", self.data, self.dynsym.offset + index * 16
            )
        return name, info, other, shndx, value

    def _name_is(self, index: int, name: bytes) -> bool:
        start = self.strings.offset + self._symbol(index)[0]
        end = start + len(name) + 1
        return end <= self.strings.offset + self.strings.size and (
            bytes(self.data[start:end]) == name + b"\0"
        )

    def _acceptable(self, index: int, version: str | None) -> bool:
        _name, info, _other, shndx, value = self._symbol(index)
        kind, binding = info & 0xF, info >> 4
        if shndx == 0 or (value == 0 and kind != _STT_TLS):
            return False
        if kind not in _BINDABLE_TYPES or binding not in _BINDABLE_BINDINGS:
            return False
        if self.versym is None:
            return True
        (raw,) = self.fmt.unpack("H", self.data, self.versym.offset + index * 2)
        hidden, number = bool(raw & _HIDDEN), raw & ~_HIDDEN
        if version is None:
            return not (hidden and number >= 2)
        named = self._version_names.get(number)
        return named == version or (named is None and not hidden)


def symbol_table(data: Buffer, *, source: str) -> SymbolTable | None:
    """The dynamic symbol table of the ELF file in ``data`` (an mmap, or bytes); None when it
    has none (a static executable). Damage raises :class:`~cuship.errors.InputError`."""
    with _reading(source):
        fmt = _format(data)
        sections = _section_table(data, fmt)
        dynsym = next((s for s in sections if s.kind == _SHT_DYNSYM), None)
        if dynsym is None:
            return None
        by_kind = {s.kind: s for s in sections}
        names = _verdef_names(data, fmt, by_kind.get(_SHT_GNU_VERDEF), sections)
        return SymbolTable(
            data=data,
            fmt=fmt,
            dynsym=dynsym,
            strings=sections[dynsym.link],
            versym=by_kind.get(_SHT_GNU_VERSYM),
            gnu=by_kind.get(_SHT_GNU_HASH),
            sysv=by_kind.get(_SHT_HASH),
            versions=frozenset(names.values()),
            _version_names=names,
        )


def _verdef_names(
    data: Buffer, fmt: _Format, verdef: _Section | None, sections: tuple[_Section, ...]
) -> dict[int, str]:
    """``{version index: name}`` from ``.gnu.version_d``: records chained by ``vd_next``,
    each naming its version in its first ``Verdaux``."""
    if verdef is None:
        return {}
    raw = _bytes(data, verdef)
    strings = _bytes(data, sections[verdef.link])
    record = struct.Struct(("<" if fmt.little else ">") + "HHHHIII")
    names: dict[int, str] = {}
    offset = 0
    for _ in range(len(raw) // record.size):  # bounded: a cycle of vd_next cannot spin
        _version, _flags, number, _count, _hash, aux, following = record.unpack_from(raw, offset)
        (name,) = fmt.unpack("I", raw, offset + aux)
        names[number & ~_HIDDEN] = _cstring(strings, name)
        if not following:
            break
        offset += following
    return names
