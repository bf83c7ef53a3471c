"""A pure parser for CUDA fatbinary containers (the ``.nv_fatbin`` section of a shared object).

Layout (little-endian, checked against cuobjdump on nvcc 13.0 output; research/validation.md):
one or more containers back to back, each a 16-byte header (u32 magic 0xBA55ED50, u16 version,
u16 header size, u64 payload size) followed by entries. Each entry header holds u16 kind at +0,
u32 header size at +4, u64 padded payload size at +8, u16 minor and u16 major of the PTX ISA
version at +0x18 (a PTX entry's ``.version``: 9.0 from CUDA 13.0, 8.5 from 12.5 and 12.6; checked
against the PTX text cuobjdump extracts), u32 arch at +0x1c, u64 flags at +0x28.
A linked .so often carries a second container from nvlink's device-link step, so arches are
counted per kind over all containers, never per container.

Only ``.nv_fatbin`` is what the CUDA runtime loads. ``__nv_relfatbin`` holds relocatable device
code (``-rdc=true``) kept for a later device link; the runtime never loads it, and cuobjdump does
not list it (bitsandbytes' ``libbitsandbytes_cuda126.so`` carries PTX compute_90 there and none
in ``.nv_fatbin``: ``cuobjdump --list-ptx`` says "No PTX file found"). Its entries come back
marked ``relocatable``, and no GPU is ever said to run them.
"""

from __future__ import annotations

import mmap
import struct
from pathlib import Path
from typing import Literal, TypeAlias

from cuship import _read
from cuship._record import frozen
from cuship.errors import InputError
from cuship.wheel.read.elf import ElfFacts, quick_facts

__all__ = [
    "FATBIN_SECTIONS",
    "FatbinEntry",
    "Kind",
    "fatbin_of_elf",
    "parse_fatbin",
    "parse_sections",
]

Kind = Literal["sass", "ptx", "lto"]
Buffer: TypeAlias = bytes | bytearray | memoryview | mmap.mmap

LOADED_SECTION = ".nv_fatbin"
RELOCATABLE_SECTION = "__nv_relfatbin"
FATBIN_SECTIONS = (LOADED_SECTION, RELOCATABLE_SECTION)
CONTAINER_MAGIC = 0xBA55ED50
_CONTAINER = struct.Struct("<IHHQ")
_ENTRY_MIN = 0x40  # the smallest entry header seen (sm_80 / sm_90 cubins)
_KINDS: dict[int, Kind] = {1: "ptx", 2: "sass", 8: "lto"}
_FLAG_ARCH_A = 0x100000  # sm_90a, sm_100a: arch-specific code
_FLAG_ARCH_F = 0x200000  # sm_100f: family-portable code
_CODECS = ((0x8000, "zstd"), (0x2000, "lz4"))


@frozen
class FatbinEntry:
    """One image in a fatbinary: SASS (a cubin), PTX, or LTO IR, for one SM."""

    kind: Kind
    sm: str  # "80", "90a", "100f"
    compressed: bool
    codec: str | None  # "zstd", "lz4" or None
    size: int  # bytes of payload as stored (compressed size when compressed)
    container: int  # index of the container, counted over all fatbin sections of the file
    relocatable: bool = False  # from __nv_relfatbin: for a device link, never loaded as it is
    isa: str | None = None  # a PTX entry's ISA version ("8.5"); None for SASS and LTO


def parse_fatbin(
    data: Buffer, *, source: str = "<bytes>", start: int = 0, end: int | None = None
) -> tuple[FatbinEntry, ...]:
    """Parse every container in ``data[start:end]``.

    Offsets in error messages count from the start of ``data`` (the file, for an mmap).
    """
    stop = len(data) if end is None else end
    return tuple(_walk(data, start, stop, source, first_container=0, relocatable=False))


def parse_sections(data: Buffer, facts: ElfFacts, *, source: str) -> tuple[FatbinEntry, ...]:
    """Parse the fatbin sections that ``facts`` located in ``data`` (the whole ELF file); the
    entries of ``__nv_relfatbin`` are marked ``relocatable``."""
    entries: list[FatbinEntry] = []
    for name in FATBIN_SECTIONS:
        span = facts.section(name)
        if span is None:
            continue
        first = max((e.container for e in entries), default=-1) + 1
        relocatable = name == RELOCATABLE_SECTION
        entries.extend(
            _walk(data, span.offset, span.offset + span.size, source, first, relocatable)
        )
    return tuple(entries)


def fatbin_of_elf(source: Path | bytes) -> tuple[FatbinEntry, ...]:
    """All fatbin entries of an ELF file on disk (read through mmap) or in memory."""
    if isinstance(source, bytes):
        facts = quick_facts(source, source="<bytes>", wanted=FATBIN_SECTIONS)
        return parse_sections(source, facts, source="<bytes>")
    try:
        with _read.mapped(source, _read.SHARED_OBJECT) as mapped:
            if not len(mapped):
                raise InputError(f"{str(source)!r} is empty", hint="rebuild the shared object")
            facts = quick_facts(mapped, source=str(source), wanted=FATBIN_SECTIONS)
            return parse_sections(mapped, facts, source=str(source))
    except FileNotFoundError as err:
        raise InputError(f"{str(source)!r} does not exist", hint="check the path") from err


def _walk(
    data: Buffer, pos: int, stop: int, source: str, first_container: int, relocatable: bool
) -> list[FatbinEntry]:
    entries: list[FatbinEntry] = []
    container = first_container
    while pos < stop:
        if _only_padding(data, pos, stop):
            break
        if pos + _CONTAINER.size > stop:
            raise _bad(source, pos, "truncated fatbin container header")
        magic, _version, header, payload = _CONTAINER.unpack_from(data, pos)
        if magic != CONTAINER_MAGIC:
            raise _bad(
                source, pos, f"bad fatbin magic {magic:#010x} (expected {CONTAINER_MAGIC:#x})"
            )
        body, body_end = pos + header, pos + header + payload
        if header < _CONTAINER.size or body_end > stop:
            raise _bad(source, pos, f"truncated fatbin container: {payload} payload bytes declared")
        entries.extend(_entries(data, body, body_end, source, (container, relocatable)))
        container += 1
        pos = body_end
    return entries


def _only_padding(data: Buffer, pos: int, stop: int) -> bool:
    # Sections are 8-byte aligned; a linker may leave zero bytes after the last container.
    return stop - pos < 8 and not any(data[pos:stop])


def _entries(
    data: Buffer, pos: int, stop: int, source: str, where: tuple[int, bool]
) -> list[FatbinEntry]:
    """The entries of one container; ``where``: (its index, whether it is relocatable)."""
    found: list[FatbinEntry] = []
    while pos < stop:
        if pos + _ENTRY_MIN > stop:
            raise _bad(source, pos, "truncated fatbin entry header")
        found.append(_entry(data, pos, stop, source, where))
        header, padded = struct.unpack_from("<IQ", data, pos + 4)
        pos += header + padded
    return found


def _entry(data: Buffer, pos: int, stop: int, source: str, where: tuple[int, bool]) -> FatbinEntry:
    kind_code, _version, header, padded, packed = struct.unpack_from("<HHIQI", data, pos)
    kind = _KINDS.get(kind_code)
    if kind is None:
        raise _bad(
            source, pos, f"unknown fatbin entry kind {kind_code} (known: 1 PTX, 2 ELF, 8 LTO)"
        )
    if header < _ENTRY_MIN or pos + header + padded > stop:
        raise _bad(source, pos, f"truncated fatbin entry: header {header} + payload {padded} bytes")
    minor, major, arch = struct.unpack_from("<HHI", data, pos + 0x18)
    (flags,) = struct.unpack_from("<Q", data, pos + 0x28)
    codec = next((name for bit, name in _CODECS if flags & bit), None)
    return FatbinEntry(
        kind=kind,
        sm=f"{arch}{_suffix(flags)}",
        compressed=codec is not None,
        codec=codec,
        size=packed if codec else padded,
        container=where[0],
        relocatable=where[1],
        isa=f"{major}.{minor}" if kind == "ptx" else None,
    )


def _suffix(flags: int) -> str:
    if flags & _FLAG_ARCH_A:
        return "a"
    if flags & _FLAG_ARCH_F:
        return "f"
    return ""


def _bad(source: str, offset: int, problem: str) -> InputError:
    return InputError(
        f"{source!r}: {problem} at offset {offset:#x}",
        hint="the fatbinary is damaged or of a layout cuship does not know; "
        "compare with `cuobjdump --list-elf --list-ptx`",
    )
