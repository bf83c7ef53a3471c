"""The ELF facts read a second, independent way, through pyelftools: the oracle that cuship's own
struct reader (:func:`cuship.wheel.read.elf.quick_facts`) is tested against.

Nothing here shares code with the reader under test: symbols, version needs and version indexes
come from pyelftools' own section classes. It is slow (an object per symbol), which is why src
does not use it.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import BinaryIO

from elftools.common.exceptions import ELFError
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.enums import ENUM_VERSYM
from elftools.elf.gnuversions import GNUVerNeedSection, GNUVerSymSection
from elftools.elf.sections import Section, SymbolTableSection

from cuship.errors import InputError
from cuship.wheel.read.elf import ElfFacts, SectionSpan, VersionNeed

__all__ = ["elf_facts", "newest_glibc"]

_HIDDEN = 0x8000  # the versym bit that hides a version; not part of its index


def elf_facts(stream: BinaryIO, *, source: str, wanted: Iterable[str] = ()) -> ElfFacts:
    """What :func:`~cuship.wheel.read.elf.quick_facts` reads, read from ``stream`` by pyelftools.

    Damage raises :class:`InputError` with the messages the struct reader gives.
    """
    size = _stream_size(stream)
    try:
        elf = ELFFile(stream)
        sections = list(elf.iter_sections())
        needed, soname, paths = _dynamic(sections)
        spans = tuple(_spans(sections, frozenset(wanted), size, source))
        imported = _undefined(sections, size, source)
        versions = _versions(sections, [(i, n) for i, n, _ in imported], size, source)
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
        undefined=tuple(name for _, name, _ in imported),
        versions=versions,
        weak=tuple(name for _, name, weak in imported if weak),
        rpath=paths.get("DT_RPATH", ()),
        runpath=paths.get("DT_RUNPATH", ()),
        nodeflib=bool(paths.get("DT_FLAGS_1")),
    )


def newest_glibc(facts: ElfFacts) -> tuple[int, int] | None:
    """The newest ``GLIBC_x.y`` among ``facts``' version needs, as ``glibc_needed`` reports it."""
    found = []
    for need in facts.versions:
        number = need.version.removeprefix("GLIBC_")
        if need.version.startswith("GLIBC_") and number.replace(".", "").isdigit():
            major, minor = [*number.split("."), "0"][:2]
            found.append((int(major), int(minor)))
    return max(found, default=None)


def _text(name: str) -> str:
    """pyelftools decodes names as latin-1; cuship's reader as UTF-8."""
    return name.encode("latin-1").decode("utf-8", "replace")


def _stream_size(stream: BinaryIO) -> int:
    here = stream.tell()
    end = stream.seek(0, 2)
    stream.seek(here)
    return end


def _dynamic(
    sections: list[Section],
) -> tuple[tuple[str, ...], str | None, dict[str, tuple[str, ...]]]:
    """DT_NEEDED, DT_SONAME, and DT_RPATH/DT_RUNPATH split at ':' (empty entries dropped) with
    ``DT_FLAGS_1`` holding ``("nodeflib",)`` when DF_1_NODEFLIB is set."""
    needed: list[str] = []
    soname: str | None = None
    paths: dict[str, tuple[str, ...]] = {}
    for section in sections:
        if not isinstance(section, DynamicSection):
            continue
        for tag in section.iter_tags():
            kind = tag.entry.d_tag
            if kind == "DT_NEEDED":
                needed.append(_text(tag.needed))  # type: ignore[attr-defined]
            elif kind == "DT_SONAME":
                soname = _text(tag.soname)  # type: ignore[attr-defined]
            elif kind == "DT_RPATH":
                paths["DT_RPATH"] = _split(tag.rpath)  # type: ignore[attr-defined]
            elif kind == "DT_RUNPATH":
                paths["DT_RUNPATH"] = _split(tag.runpath)  # type: ignore[attr-defined]
            elif kind == "DT_FLAGS_1" and int(tag.entry.d_val) & 0x800:
                paths["DT_FLAGS_1"] = ("nodeflib",)
    return tuple(needed), soname, paths


def _split(text: str) -> tuple[str, ...]:
    return tuple(part for part in _text(text).split(":") if part)


def _spans(
    sections: list[Section], wanted: frozenset[str], size: int, source: str
) -> Iterable[SectionSpan]:
    for section in sections:
        if section.name not in wanted or section["sh_type"] == "SHT_NOBITS":
            continue
        _inside(section, size, source)
        yield SectionSpan(
            name=section.name, offset=int(section["sh_offset"]), size=int(section["sh_size"])
        )


def _undefined(sections: list[Section], size: int, source: str) -> list[tuple[int, str, bool]]:
    """Index, name and weakness of each dynamic symbol whose section is SHN_UNDEF (what it
    imports)."""
    table = next(
        (s for s in sections if isinstance(s, SymbolTableSection) and s.name == ".dynsym"), None
    )
    if table is None:
        return []
    _inside(table, size, source)
    _inside(sections[int(table["sh_link"])], size, source)
    return [
        (index, _text(symbol.name), symbol["st_info"]["bind"] == "STB_WEAK")
        for index, symbol in enumerate(table.iter_symbols())
        if symbol["st_shndx"] == "SHN_UNDEF" and symbol["st_name"] != 0
    ]


def _versions(
    sections: list[Section], imported: list[tuple[int, str]], size: int, source: str
) -> tuple[VersionNeed, ...]:
    need = next((s for s in sections if isinstance(s, GNUVerNeedSection)), None)
    if need is None:
        return ()
    _inside(need, size, source)
    named: dict[int, tuple[str, str, bool]] = {}
    for library, entries in need.iter_versions():
        for entry in entries:
            weak = bool(int(entry["vna_flags"]) & 0x2)
            named[int(entry["vna_other"])] = (_text(library.name or ""), _text(entry.name), weak)
    indexes = _version_indexes(sections, size, source)
    symbols: dict[int, list[str]] = {index: [] for index in named}
    for position, name in imported:
        if position < len(indexes):
            symbols.setdefault(indexes[position], []).append(name)
    return tuple(
        VersionNeed(
            library=library, version=version, symbols=tuple(sorted(symbols[index])), weak=weak
        )
        for index, (library, version, weak) in sorted(named.items())
    )


def _version_indexes(sections: list[Section], size: int, source: str) -> list[int]:
    """The version index of each ``.dynsym`` entry, from ``.gnu.version``."""
    versym = next((s for s in sections if isinstance(s, GNUVerSymSection)), None)
    if versym is None:
        return []
    _inside(versym, size, source)
    indexes = []
    for symbol in versym.iter_symbols():
        ndx = symbol["ndx"]  # pyelftools names the reserved indexes
        indexes.append((ENUM_VERSYM[ndx] if isinstance(ndx, str) else int(ndx)) & ~_HIDDEN)
    return indexes


def _inside(section: Section, size: int, source: str) -> None:
    offset, length = int(section["sh_offset"]), int(section["sh_size"])
    if offset + length > size:
        raise InputError(
            f"{source!r}: section {section.name!r} at offset {offset:#x} runs {length} bytes "
            f"past the end of the file ({size} bytes)",
            hint="the file is truncated; rebuild it or download it again",
        )
