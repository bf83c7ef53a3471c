"""ELF facts: machine, SONAME, DT_NEEDED, DT_RPATH and DT_RUNPATH, the undefined dynamic symbols
(which of them are weak), the symbol versions they need and where named sections lie in the file.

Only headers, the dynamic symbol table, the version tables and their string tables are read;
other section contents
stay in the caller's buffer (an mmap for files on disk), so a 1 GB shared object costs a few
page faults, not a copy. :func:`quick_facts` reads with ``struct`` alone: importing it costs
next to nothing, and it reads many times faster than pyelftools, which the tests keep as the
oracle it must agree with (``tests/elf_oracle.py``).
"""

from __future__ import annotations

import mmap
import re
import struct
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple, TypeAlias

from cuship import _read
from cuship._record import frozen
from cuship.errors import InputError
from cuship.wheel.read._elf_machines import MACHINES

__all__ = [
    "ELF_MAGIC",
    "ElfFacts",
    "SectionSpan",
    "VersionNeed",
    "glibc_needed",
    "is_elf",
    "quick_facts",
]

ELF_MAGIC = b"\x7fELF"


@frozen
class SectionSpan:
    """Where a section's bytes lie in the file: ``[offset, offset + size)``."""

    name: str
    offset: int
    size: int


@frozen
class VersionNeed:
    """The symbols an object imports at one version of one library (``GLIBC_2.34`` of
    ``libc.so.6``), from ``.gnu.version_r`` and ``.gnu.version``."""

    library: str
    version: str
    symbols: tuple[str, ...]
    weak: bool = False  # VER_FLG_WEAK: a library without this version is no error

    def to_json(self) -> dict[str, object]:
        return {"library": self.library, "version": self.version, "symbols": list(self.symbols)}


@frozen
class ElfFacts:
    """What cuship needs to know about one ELF file."""

    machine: str
    bits: int
    soname: str | None
    needed: tuple[str, ...]
    sections: tuple[SectionSpan, ...]
    undefined: tuple[str, ...] = ()  # names of the undefined (imported) dynamic symbols
    versions: tuple[VersionNeed, ...] = ()  # the symbol versions it requires (with the symbols)
    weak: tuple[str, ...] = ()  # the undefined symbols bound weakly (absent is no error)
    rpath: tuple[str, ...] = ()  # DT_RPATH, split at ':' (empty entries dropped, as ld.so does)
    runpath: tuple[str, ...] = ()  # DT_RUNPATH, likewise
    nodeflib: bool = False  # DF_1_NODEFLIB: the loader skips ld.so.cache and the default dirs

    def section(self, name: str) -> SectionSpan | None:
        return next((s for s in self.sections if s.name == name), None)


def is_elf(head: bytes) -> bool:
    """True when ``head`` (the first bytes of a file) starts with the ELF magic."""
    return head[:4] == ELF_MAGIC


Buffer: TypeAlias = bytes | bytearray | memoryview | mmap.mmap

_SHT_SYMTAB, _SHT_DYNAMIC, _SHT_NOBITS, _SHT_DYNSYM = 2, 6, 8, 11
_SHT_GNU_VERNEED, _SHT_GNU_VERSYM = 0x6FFFFFFE, 0x6FFFFFFF
_DT_NULL, _DT_NEEDED, _DT_SONAME, _DT_RPATH, _DT_RUNPATH = 0, 1, 14, 15, 29
_DT_FLAGS_1, _DF_1_NODEFLIB = 0x6FFFFFFB, 0x800
_STB_WEAK = 2


def quick_facts(
    data: Buffer,
    *,
    source: str,
    wanted: Iterable[str] = (),
    symbols: bool | tuple[bytes, ...] = True,
) -> ElfFacts:
    """Read ELF facts from ``data``: the whole file, in memory or an mmap.

    ``wanted`` names the sections whose spans are returned; ``source`` names the file in error
    messages. ``symbols``: False skips the undefined symbols; byte strings read them only when
    the dynamic string table contains one of them (a substring search in C that lets a caller
    looking for, say, torch's symbols skip the tables that name none). A file that is not ELF,
    or is cut short, raises :class:`InputError`.
    """
    with _reading(source):
        return _quick(data, frozenset(wanted), symbols)


def glibc_needed(path: Path) -> tuple[int, int] | None:
    """The newest ``GLIBC_x.y`` symbol version that the ELF file at ``path`` requires, if any."""
    with _reading(str(path)), _read.mapped(path, _read.SHARED_OBJECT) as data:
        fmt = _format(data)
        sections = _section_table(data, fmt)
        names = [
            version
            for need in sections
            if need.kind == _SHT_GNU_VERNEED
            for _, _, version, _ in _verneed_entries(
                _bytes(data, need), _bytes(data, sections[need.link]), little=fmt.little
            )
        ]
    return max(filter(None, map(_glibc_version, names)), default=None)


def _glibc_version(name: str) -> tuple[int, int] | None:
    """``GLIBC_2.34`` as (2, 34); None for other versions (``GLIBC_PRIVATE``, ``CXXABI_1.3``)."""
    if not (name.startswith("GLIBC_") and name[6:].replace(".", "").isdigit()):
        return None
    major, minor = [*name[6:].split("."), "0"][:2]
    return int(major), int(minor)


_TRUNCATED = "the file is truncated; rebuild it or download it again"
_UNREADABLE = "is it truncated or not a shared object? rebuild it or download it again"


@contextmanager
def _reading(source: str) -> Iterator[None]:
    """Turn what a damaged or foreign file makes the reader raise into :class:`InputError`."""
    try:
        yield
    except _Truncated as err:
        raise InputError(f"{source!r}: {err}", hint=_TRUNCATED) from err
    except (struct.error, IndexError, OverflowError) as err:  # an offset past the end of the data
        raise InputError(
            f"{source!r} is not a readable ELF file: an offset or size in its headers points "
            "past the end of the file",
            hint=_UNREADABLE,
        ) from err
    except (KeyError, ValueError, OSError) as err:
        raise InputError(f"{source!r} is not a readable ELF file: {err}", hint=_UNREADABLE) from err


class _Truncated(Exception):
    pass


@frozen(kw_only=False)
class _Format:
    """The struct layouts of one ELF class and byte order."""

    bits: int
    little: bool

    def unpack(self, fmt: str, data: Buffer, offset: int) -> tuple[int, ...]:
        return struct.unpack_from(("<" if self.little else ">") + fmt, data, offset)

    @property
    def header(self) -> str:  # e_type .. e_shstrndx, after e_ident
        return "HHIQQQIHHHHHH" if self.bits == 64 else "HHIIIIIHHHHHH"

    @property
    def section(self) -> str:  # name, type, flags, addr, offset, size, link, info, align, entsize
        return "IIQQQQIIQQ" if self.bits == 64 else "IIIIIIIIII"

    @property
    def dyn(self) -> str:
        return "qQ" if self.bits == 64 else "iI"


def _format(data: Buffer) -> _Format:
    """The class and byte order that ``e_ident`` names; ValueError when it is no ELF header."""
    head = bytes(data[:6])
    if not is_elf(head):
        raise ValueError(f"it starts with {head[:4]!r}, not with the ELF magic {ELF_MAGIC!r}")
    if len(head) < 6 or head[4] not in (1, 2) or head[5] not in (1, 2):
        raise ValueError(f"unknown ELF class or byte order in {head!r}")
    return _Format(bits=64 if head[4] == 2 else 32, little=head[5] == 1)


class _Section(NamedTuple):  # a tuple: thousands are made per environment scan
    name: str
    kind: int
    offset: int
    size: int
    link: int


def _quick(data: Buffer, wanted: frozenset[str], symbols: bool | tuple[bytes, ...]) -> ElfFacts:
    fmt = _format(data)
    sections = _section_table(data, fmt)
    dynamic = _quick_dynamic(data, fmt, sections)
    dynsym = next(
        (s for s in sections if s.name == ".dynsym" and s.kind in (_SHT_DYNSYM, _SHT_SYMTAB)),
        None,
    )
    imported: list[tuple[int, str, bool]] = []
    read_symbols = False
    if symbols is not False and dynsym is not None:
        names = _bytes(data, sections[dynsym.link])
        if symbols is True or any(hint in names for hint in symbols):
            table = _bytes(data, dynsym)
            imported = _undefined_indexed(table, names, bits=fmt.bits, little=fmt.little)
            read_symbols = True
    versions = _quick_versions(data, fmt, sections, imported) if read_symbols else ()
    found = [s for s in sections if s.name in wanted and s.kind != _SHT_NOBITS]
    for section in found:
        _inside(data, section)
    spans = tuple(SectionSpan(name=s.name, offset=s.offset, size=s.size) for s in found)
    machine = fmt.unpack("H", data, 18)[0]
    return ElfFacts(
        machine=MACHINES.get(machine, str(machine)),
        bits=fmt.bits,
        soname=dynamic.soname,
        needed=dynamic.needed,
        sections=spans,
        undefined=tuple(name for _, name, _ in imported),
        versions=versions,
        weak=tuple(name for _, name, weak in imported if weak),
        rpath=dynamic.rpath,
        runpath=dynamic.runpath,
        nodeflib=dynamic.nodeflib,
    )


def _section_table(data: Buffer, fmt: _Format) -> tuple[_Section, ...]:
    header = fmt.unpack(fmt.header, data, 16)
    shoff, shentsize, shnum, shstrndx = header[5], header[10], header[11], header[12]
    if shoff == 0:
        return ()
    first = fmt.unpack(fmt.section, data, shoff)
    count = shnum or first[5]  # extended numbering: the count is section 0's sh_size
    entry = struct.Struct(("<" if fmt.little else ">") + fmt.section)
    if shentsize == entry.size:
        raw = list(entry.iter_unpack(data[shoff : shoff + count * shentsize]))
    else:
        raw = [fmt.unpack(fmt.section, data, shoff + i * shentsize) for i in range(count)]
    if len(raw) < count:
        raise _Truncated(f"the section header table ({count} entries) runs past the end")
    strndx = first[6] if shstrndx == 0xFFFF else shstrndx  # SHN_XINDEX: section 0's sh_link
    table = raw[strndx]
    names = _bytes(data, _Section(".shstrtab", 0, table[4], table[5], 0))
    return tuple(_Section(_cstring(names, f[0]), f[1], f[4], f[5], f[6]) for f in raw)


class _Dynamic(NamedTuple):
    needed: tuple[str, ...]
    soname: str | None
    rpath: tuple[str, ...]
    runpath: tuple[str, ...]
    nodeflib: bool


def _quick_dynamic(data: Buffer, fmt: _Format, sections: tuple[_Section, ...]) -> _Dynamic:
    needed: list[str] = []
    found: dict[int, str] = {}
    flags = 0
    entry = struct.Struct(("<" if fmt.little else ">") + fmt.dyn)
    for section in sections:
        if section.kind != _SHT_DYNAMIC:
            continue
        strings = _bytes(data, sections[section.link])
        raw = _bytes(data, section)
        for tag, value in entry.iter_unpack(raw[: len(raw) - len(raw) % entry.size]):
            if tag == _DT_NULL:
                break
            if tag == _DT_NEEDED:
                needed.append(_cstring(strings, value))
            elif tag in (_DT_SONAME, _DT_RPATH, _DT_RUNPATH):
                found.setdefault(tag, _cstring(strings, value))
            elif tag == _DT_FLAGS_1:
                flags = value
    return _Dynamic(
        needed=tuple(needed),
        soname=found.get(_DT_SONAME),
        rpath=_path_list(found.get(_DT_RPATH)),
        runpath=_path_list(found.get(_DT_RUNPATH)),
        nodeflib=bool(flags & _DF_1_NODEFLIB),
    )


def _path_list(text: str | None) -> tuple[str, ...]:
    """A colon-separated search path; ld.so ignores empty entries of DT_RPATH/DT_RUNPATH
    (glibc elf/dl-load.c, fillin_rpath)."""
    return tuple(part for part in (text or "").split(":") if part)


# Elf32_Sym: name, value, size, info, other, shndx; Elf64_Sym: name, info, other, shndx, value, size.
_SYMBOL_LAYOUT = {32: (16, 14), 64: (24, 6)}  # entry size, offset of the 2-byte st_shndx
_INFO_AT = {32: 12, 64: 4}  # offset of the 1-byte st_info (binding in its high nibble)
_ZERO = re.compile(b"\x00")


def _undefined_indexed(
    data: bytes, names: bytes, *, bits: int, little: bool
) -> list[tuple[int, str, bool]]:
    """The undefined symbols of a ``.dynsym`` table's bytes, with their index in the table,
    named from its string table, and whether each is bound weakly.

    Only symbols whose ``st_shndx`` is 0 are unpacked: the two bytes of that field are taken
    from every entry by slicing, OR-ed, and searched for zero bytes, all in C. A library that
    exports 100,000 symbols and imports 700 costs 700 unpacks, not 100,000.
    """
    size, shndx = _SYMBOL_LAYOUT[bits]
    count = len(data) // size
    low, high = data[shndx : count * size : size], data[shndx + 1 : count * size : size]
    both = (int.from_bytes(low, "little") | int.from_bytes(high, "little")).to_bytes(
        count, "little"
    )
    name_at = struct.Struct("<I" if little else ">I")  # st_name is the first word in both classes
    info = _INFO_AT[bits]
    found: list[tuple[int, str, bool]] = []
    for match in _ZERO.finditer(both):
        at = match.start() * size
        start = name_at.unpack_from(data, at)[0]
        if start == 0:  # the null symbol
            continue
        end = names.find(b"\0", start)
        name = names[start : end if end >= 0 else len(names)].decode("utf-8", "replace")
        found.append((match.start(), name, data[at + info] >> 4 == _STB_WEAK))
    return found


def _quick_versions(
    data: Buffer,
    fmt: _Format,
    sections: tuple[_Section, ...],
    imported: list[tuple[int, str, bool]],
) -> tuple[VersionNeed, ...]:
    need = next((s for s in sections if s.kind == _SHT_GNU_VERNEED), None)
    if need is None:
        return ()
    versym = next((s for s in sections if s.kind == _SHT_GNU_VERSYM), None)
    strings = _bytes(data, sections[need.link])
    table = _bytes(data, versym) if versym is not None else b""
    return _needs_in(_bytes(data, need), strings, table, imported, little=fmt.little)


_HIDDEN = 0x8000  # the versym bit that marks a version as hidden, not part of the index


def _needs_in(
    verneed: bytes,
    strings: bytes,
    versym: bytes,
    imported: list[tuple[int, str, bool]],
    *,
    little: bool,
) -> tuple[VersionNeed, ...]:
    """The versions an object needs and the imported symbols bound to each (``.gnu.version``
    holds one version index per ``.dynsym`` entry)."""
    named = {
        index: (library, version, weak)
        for index, library, version, weak in _verneed_entries(verneed, strings, little=little)
    }
    order = "<" if little else ">"
    indexes = struct.unpack(f"{order}{len(versym) // 2}H", versym[: len(versym) // 2 * 2])
    symbols: dict[int, list[str]] = {index: [] for index in named}
    for position, name, _ in imported:
        if position < len(indexes):
            symbols.setdefault(indexes[position] & ~_HIDDEN, []).append(name)
    return tuple(
        VersionNeed(
            library=library, version=version, symbols=tuple(sorted(symbols[index])), weak=weak
        )
        for index, (library, version, weak) in sorted(named.items())
    )


_VER_FLG_WEAK = 0x2


def _verneed_entries(
    verneed: bytes, strings: bytes, *, little: bool
) -> Iterator[tuple[int, str, str, bool]]:
    """``(version index, library, version, weak)`` for each version ``.gnu.version_r``
    requires: per library a record chained by ``vn_next``, holding entries chained by
    ``vna_next`` whose ``vna_other`` is the version's index and ``vna_flags`` may say
    VER_FLG_WEAK. The same layout in both ELF classes."""
    order = "<" if little else ">"
    need, aux = struct.Struct(order + "HHIII"), struct.Struct(order + "IHHII")
    offset = 0
    for _ in range(len(verneed) // need.size):  # bounded: a cycle of vn_next cannot spin
        _version, count, library, first, following = need.unpack_from(verneed, offset)
        at = offset + first
        for _ in range(min(count, len(verneed) // aux.size)):
            _hash, flags, other, name, after = aux.unpack_from(verneed, at)
            yield (
                other,
                _cstring(strings, library),
                _cstring(strings, name),
                bool(flags & _VER_FLG_WEAK),
            )
            if not after:
                break
            at += after
        if not following:
            break
        offset += following


def _bytes(data: Buffer, section: _Section) -> bytes:
    _inside(data, section)
    return bytes(data[section.offset : section.offset + section.size])


def _inside(data: Buffer, section: _Section) -> None:
    if section.kind != _SHT_NOBITS and section.offset + section.size > len(data):
        raise _Truncated(
            f"section {section.name!r} at offset {section.offset:#x} runs {section.size} bytes "
            f"past the end of the file ({len(data)} bytes)"
        )


def _cstring(table: bytes, start: int) -> str:
    end = table.find(b"\0", start)
    return table[start : end if end >= 0 else len(table)].decode("utf-8", "replace")
