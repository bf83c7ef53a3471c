"""ELF facts via pyelftools: machine, SONAME, DT_NEEDED, the undefined dynamic symbols and where
named sections lie in the file.

Only headers, the dynamic symbol table and its string table are read; other section contents
stay in the caller's buffer (an mmap for files on disk), so a 1 GB shared object costs a few
page faults, not a copy.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from elftools.common.exceptions import ELFError
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerNeedSection
from elftools.elf.sections import Section, SymbolTableSection

from cuship.errors import InputError

__all__ = [
    "ELF_MAGIC",
    "ElfFacts",
    "SectionSpan",
    "VersionNeed",
    "elf_facts",
    "glibc_needed",
    "is_elf",
]

ELF_MAGIC = b"\x7fELF"


@dataclass(frozen=True, slots=True, kw_only=True)
class SectionSpan:
    """Where a section's bytes lie in the file: ``[offset, offset + size)``."""

    name: str
    offset: int
    size: int


@dataclass(frozen=True, slots=True, kw_only=True)
class VersionNeed:
    """The symbols an object imports at one version of one library (``GLIBC_2.34`` of
    ``libc.so.6``), from ``.gnu.version_r`` and ``.gnu.version``."""

    library: str
    version: str
    symbols: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {"library": self.library, "version": self.version, "symbols": list(self.symbols)}


@dataclass(frozen=True, slots=True, kw_only=True)
class ElfFacts:
    """What cuship needs to know about one ELF file."""

    machine: str
    bits: int
    soname: str | None
    needed: tuple[str, ...]
    sections: tuple[SectionSpan, ...]
    undefined: tuple[str, ...] = ()  # names of the undefined (imported) dynamic symbols
    versions: tuple[VersionNeed, ...] = ()  # the symbol versions it requires, with their symbols

    def section(self, name: str) -> SectionSpan | None:
        return next((s for s in self.sections if s.name == name), None)


def is_elf(head: bytes) -> bool:
    """True when ``head`` (the first bytes of a file) starts with the ELF magic."""
    return head[:4] == ELF_MAGIC


def elf_facts(stream: BinaryIO, *, source: str, wanted: Iterable[str] = ()) -> ElfFacts:
    """Read ELF facts from ``stream`` (a file, an mmap or a BytesIO).

    ``wanted`` names the sections whose spans are returned. ``source`` names the file in
    error messages. A stream that is not ELF, or is cut short, raises :class:`InputError`.
    """
    size = _stream_size(stream)
    try:
        elf = ELFFile(stream)
        sections = list(elf.iter_sections())  # pyelftools parses each header on every pass
        needed, soname = _dynamic(sections)
        spans = tuple(_spans(sections, frozenset(wanted), size, source))
        imported = _undefined_symbols(elf, sections, size, source)
        versions = _version_needs(elf, sections, imported, size, source)
        machine = str(elf["e_machine"])
    except (ELFError, struct.error, ValueError, IndexError, OSError) as err:
        raise InputError(
            f"{source!r} is not a readable ELF file: {err}",
            hint="is it truncated or not a shared object? rebuild it or download it again",
        ) from err
    return ElfFacts(
        machine=machine,
        bits=elf.elfclass,
        soname=soname,
        needed=needed,
        sections=spans,
        undefined=tuple(name for _, name in imported),
        versions=versions,
    )


def _stream_size(stream: BinaryIO) -> int:
    here = stream.tell()
    end = stream.seek(0, 2)
    stream.seek(here)
    return end


def _dynamic(sections: list[Section]) -> tuple[tuple[str, ...], str | None]:
    needed: list[str] = []
    soname: str | None = None
    for section in sections:
        if not isinstance(section, DynamicSection):
            continue
        for tag in section.iter_tags():
            if tag.entry.d_tag == "DT_NEEDED":
                needed.append(str(tag.needed))  # type: ignore[attr-defined]
            elif tag.entry.d_tag == "DT_SONAME":
                soname = str(tag.soname)  # type: ignore[attr-defined]
    return tuple(needed), soname


def _spans(
    sections: list[Section], wanted: frozenset[str], size: int, source: str
) -> Iterable[SectionSpan]:
    for section in sections:
        if section.name not in wanted or section["sh_type"] == "SHT_NOBITS":
            continue
        offset, length = int(section["sh_offset"]), int(section["sh_size"])
        if offset + length > size:
            raise InputError(
                f"{source!r}: section {section.name!r} at offset {offset:#x} runs {length} bytes "
                f"past the end of the file ({size} bytes)",
                hint="the file is truncated; rebuild it or download it again",
            )
        yield SectionSpan(name=section.name, offset=offset, size=length)


# Elf32_Sym: name, value, size, info, other, shndx; Elf64_Sym: name, info, other, shndx, value, size.
_SYMBOL_LAYOUT = {32: ("IIIBBH", 0, 5), 64: ("IBBHQQ", 0, 3)}  # format, name index, shndx index


def _undefined_symbols(
    elf: ELFFile, sections: list[Section], size: int, source: str
) -> list[tuple[int, str]]:
    """Index and name of the dynamic symbols with section index SHN_UNDEF (what it imports).

    The table is unpacked with ``struct`` in one pass: pyelftools' per-symbol objects cost
    about 100 times more, which a torch extension's thousands of symbols would feel.
    """
    table = next(
        (s for s in sections if isinstance(s, SymbolTableSection) and s.name == ".dynsym"), None
    )
    if table is None:
        return []
    strings = sections[int(table["sh_link"])]
    data, names = _contents(table, size, source), _contents(strings, size, source)
    layout, name_at, shndx_at = _SYMBOL_LAYOUT[elf.elfclass]
    entry = struct.Struct(("<" if elf.little_endian else ">") + layout)
    usable = len(data) - len(data) % entry.size
    found: list[tuple[int, str]] = []
    for index, fields in enumerate(entry.iter_unpack(data[:usable])):
        start = fields[name_at]
        if fields[shndx_at] != 0 or start == 0:  # defined, or the null symbol
            continue
        end = names.find(b"\0", start)
        name = names[start : end if end >= 0 else len(names)].decode("utf-8", "replace")
        found.append((index, name))
    return found


_HIDDEN = 0x8000  # the versym bit that marks a version as hidden, not part of the index


def _version_needs(
    elf: ELFFile,
    sections: list[Section],
    imported: list[tuple[int, str]],
    size: int,
    source: str,
) -> tuple[VersionNeed, ...]:
    """The versions the object needs (``.gnu.version_r``) and which imported symbols bind to
    each (``.gnu.version`` holds one version index per ``.dynsym`` entry)."""
    need = next((s for s in sections if isinstance(s, GNUVerNeedSection)), None)
    versym = next((s for s in sections if s["sh_type"] == "SHT_GNU_versym"), None)
    if need is None:
        return ()
    named: dict[int, tuple[str, str]] = {}
    for version, aux in need.iter_versions():
        for entry in aux:
            named[int(entry["vna_other"])] = (str(version.name), str(entry.name))
    symbols: dict[int, list[str]] = {index: [] for index in named}
    if versym is not None:
        data = _contents(versym, size, source)
        indexes = struct.unpack(f"{'<' if elf.little_endian else '>'}{len(data) // 2}H", data)
        for position, name in imported:
            if position < len(indexes):
                symbols.setdefault(indexes[position] & ~_HIDDEN, []).append(name)
    return tuple(
        VersionNeed(library=library, version=version, symbols=tuple(sorted(symbols[index])))
        for index, (library, version) in sorted(named.items())
    )


def _contents(section: Section, size: int, source: str) -> bytes:
    offset, length = int(section["sh_offset"]), int(section["sh_size"])
    if offset + length > size:
        raise InputError(
            f"{source!r}: section {section.name!r} at offset {offset:#x} runs {length} bytes "
            f"past the end of the file ({size} bytes)",
            hint="the file is truncated; rebuild it or download it again",
        )
    return bytes(section.data())


def glibc_needed(path: Path) -> tuple[int, int] | None:
    """The newest ``GLIBC_x.y`` symbol version that the ELF file at ``path`` requires, if any."""
    versions: list[tuple[int, int]] = []
    try:
        with path.open("rb") as handle:
            for section in ELFFile(handle).iter_sections():
                if isinstance(section, GNUVerNeedSection):
                    versions.extend(_glibc_versions(section))
    except (ELFError, struct.error, OSError) as err:
        raise InputError(f"{str(path)!r} is not a readable ELF file: {err}") from err
    return max(versions, default=None)


def _glibc_versions(section: GNUVerNeedSection) -> Iterable[tuple[int, int]]:
    for _need, aux in section.iter_versions():
        for entry in aux:
            name = str(entry.name)
            if name.startswith("GLIBC_") and name[6:].replace(".", "").isdigit():
                major, minor = [*name[6:].split("."), "0"][:2]
                yield int(major), int(minor)
