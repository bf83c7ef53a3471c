"""Synthetic ELF shared objects: the headers, DT_NEEDED entries, dynamic symbols and extra
sections (a ``.nv_fatbin`` with the SASS and PTX a test asks for) a test asks for.

Enough of an ELF for pyelftools and for the loader-facing facts cuship reads (no code, no
program headers): sections ``.dynstr``, ``.dynsym``, ``.dynamic`` and ``.shstrtab``, then any
extra ones, in the 32- or 64-bit layout, little- or big-endian; with versioned imports also
``.gnu.version`` (one version index per symbol) and ``.gnu.version_r`` (the versions needed,
per library).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

SHT_PROGBITS, SHT_DYNAMIC, SHT_STRTAB, SHT_DYNSYM = 1, 6, 3, 11
SHT_GNU_VERSYM, SHT_GNU_VERNEED = 0x6FFFFFFF, 0x6FFFFFFE
DT_NULL, DT_NEEDED, DT_SONAME = 0, 1, 14
_MACHINE = {(64, "<"): 62, (64, ">"): 21, (32, "<"): 3, (32, ">"): 20}  # x86-64, PPC64, 386, PPC


@dataclass(frozen=True)
class _Layout:
    bits: int
    endian: str

    def pack(self, fmt: str, *values: int) -> bytes:
        return struct.pack(self.endian + fmt, *values)

    @property
    def word(self) -> str:
        return "Q" if self.bits == 64 else "I"

    @property
    def sym_size(self) -> int:
        return 24 if self.bits == 64 else 16

    @property
    def shdr_size(self) -> int:
        return 64 if self.bits == 64 else 40

    def symbol(self, name: int, shndx: int) -> bytes:
        info = 0x12  # STB_GLOBAL, STT_FUNC
        if self.bits == 64:
            return self.pack("IBBHQQ", name, info, 0, shndx, 0, 0)
        return self.pack("IIIBBH", name, 0, 0, info, 0, shndx)

    def dyn(self, tag: int, value: int) -> bytes:
        return self.pack("qQ" if self.bits == 64 else "iI", tag, value)

    def section_header(
        self, name: int, kind: int, offset: int, size: int, link: int, entsize: int, info: int = 0
    ) -> bytes:
        w = self.word
        return self.pack(
            f"II{w}{w}{w}{w}II{w}{w}", name, kind, 0, 0, offset, size, link, info, 1, entsize
        )

    def elf_header(self, shoff: int, shnum: int, shstrndx: int) -> bytes:
        ident = b"\x7fELF" + bytes([2 if self.bits == 64 else 1, 1 if self.endian == "<" else 2, 1])
        ident = ident.ljust(16, b"\0")
        w = self.word
        ehsize = 64 if self.bits == 64 else 52
        phentsize = 56 if self.bits == 64 else 32
        machine = _MACHINE[(self.bits, self.endian)]
        rest = self.pack(
            f"HHI{w}{w}{w}IHHHHHH",
            3,  # ET_DYN
            machine,
            1,
            0,
            0,
            shoff,
            0,
            ehsize,
            phentsize,
            0,
            self.shdr_size,
            shnum,
            shstrndx,
        )
        return ident + rest


class _Strings:
    def __init__(self) -> None:
        self.data = bytearray(b"\0")

    def add(self, text: str) -> int:
        offset = len(self.data)
        self.data += text.encode() + b"\0"
        return offset


def _elf_hash(name: str) -> int:
    h = 0
    for byte in name.encode():
        h = (h << 4) + byte
        g = h & 0xF0000000
        if g:
            h ^= g >> 24
        h &= ~g
    return h & 0xFFFFFFFF


def _version_sections(
    layout: _Layout, dynstr: _Strings, versioned: Sequence[tuple[str, str, str]], plain: int
) -> tuple[bytes, bytes, int]:
    """(.gnu.version, .gnu.version_r, number of libraries) for ``versioned`` imports, after
    ``plain`` symbols (the null one included) that carry index 0 or 1."""
    index: dict[tuple[str, str], int] = {}
    for _symbol, library, version in versioned:
        index.setdefault((library, version), len(index) + 2)  # 0 local, 1 global
    versym = layout.pack("H", 0) + layout.pack("H", 1) * (plain - 1)
    versym += b"".join(layout.pack("H", index[(lib, ver)]) for _, lib, ver in versioned)
    libraries = list(dict.fromkeys(lib for lib, _ in index))
    verneed = b""
    for number, library in enumerate(libraries):
        wanted = [(ver, i) for (lib, ver), i in index.items() if lib == library]
        size = 16 + 16 * len(wanted)
        following = 0 if number == len(libraries) - 1 else size
        verneed += layout.pack("HHIII", 1, len(wanted), dynstr.add(library), 16, following)
        for position, (version, other) in enumerate(wanted):
            after = 0 if position == len(wanted) - 1 else 16
            name = dynstr.add(version)
            verneed += layout.pack("IHHII", _elf_hash(version), 0, other, name, after)
    return versym, verneed, len(libraries)


def make_elf(
    *,
    needed: Sequence[str] = (),
    undefined: Sequence[str] = (),
    defined: Sequence[str] = (),
    versioned: Sequence[tuple[str, str, str]] = (),
    soname: str | None = None,
    sections: Mapping[str, bytes] | None = None,
    bits: int = 64,
    endian: str = "<",
) -> bytes:
    """The bytes of a shared object that needs ``needed``, imports ``undefined`` and holds the
    extra ``sections`` (name -> contents, e.g. ``{".nv_fatbin": fatbin(sass=["90"])}``); the
    ``versioned`` imports are (symbol, library, version): ``("memcpy", "libc.so.6",
    "GLIBC_2.14")``."""
    layout = _Layout(bits, endian)
    dynstr, shstr = _Strings(), _Strings()
    symbols = layout.symbol(0, 0)  # the null symbol
    symbols += b"".join(layout.symbol(dynstr.add(n), 0) for n in undefined)
    symbols += b"".join(layout.symbol(dynstr.add(n), 1) for n in defined)  # defined in section 1
    symbols += b"".join(layout.symbol(dynstr.add(n), 0) for n, _, _ in versioned)
    plain = 1 + len(undefined) + len(defined)
    versym, verneed, libraries = _version_sections(layout, dynstr, versioned, plain)
    dynamic = b"".join(layout.dyn(DT_NEEDED, dynstr.add(lib)) for lib in needed)
    if soname is not None:
        dynamic += layout.dyn(DT_SONAME, dynstr.add(soname))
    dynamic += layout.dyn(DT_NULL, 0)
    extra = dict(sections or {})
    versions = (".gnu.version", ".gnu.version_r") if versioned else ()
    base = (".dynstr", ".dynsym", ".dynamic", ".shstrtab")
    names = {n: shstr.add(n) for n in (*base, *extra, *versions)}
    header_size = 64 if bits == 64 else 52
    blobs = [bytes(dynstr.data), symbols, dynamic, bytes(shstr.data), *extra.values()]
    if versioned:
        blobs += [versym, verneed]
    offsets, position = [], header_size
    for blob in blobs:
        offsets.append(position)
        position += len(blob)
    shoff = position + (-position % 8)
    dyn_entsize = 16 if bits == 64 else 8
    headers = [
        b"\0" * layout.shdr_size,
        layout.section_header(names[".dynstr"], SHT_STRTAB, offsets[0], len(blobs[0]), 0, 0),
        layout.section_header(
            names[".dynsym"], SHT_DYNSYM, offsets[1], len(blobs[1]), 1, layout.sym_size
        ),
        layout.section_header(
            names[".dynamic"], SHT_DYNAMIC, offsets[2], len(blobs[2]), 1, dyn_entsize
        ),
        layout.section_header(names[".shstrtab"], SHT_STRTAB, offsets[3], len(blobs[3]), 0, 0),
    ]
    for index, name in enumerate(extra, start=4):
        headers.append(
            layout.section_header(
                names[name], SHT_PROGBITS, offsets[index], len(blobs[index]), 0, 0
            )
        )
    if versioned:
        at = 4 + len(extra)
        headers += [
            layout.section_header(
                names[".gnu.version"], SHT_GNU_VERSYM, offsets[at], len(blobs[at]), 2, 2
            ),
            layout.section_header(
                names[".gnu.version_r"],
                SHT_GNU_VERNEED,
                offsets[at + 1],
                len(blobs[at + 1]),
                1,
                0,
                libraries,
            ),
        ]
    body = b"".join(blobs).ljust(shoff - header_size, b"\0")
    return layout.elf_header(shoff, len(headers), 4) + body + b"".join(headers)


# --- CUDA fatbinaries (the layout src/cuship/wheel/read/fatbin.py documents) ------------------------

_ENTRY_KIND = {"ptx": 1, "sass": 2}


def fatbin_entry(kind: str, sm: str, isa: str = "1.0") -> bytes:
    """One fatbin entry header (no payload) for ``kind`` "sass" or "ptx" and ``sm`` "90"/"90a";
    ``isa``: a PTX entry's ISA version ("8.5"; the default, 1.0, is one no table knows)."""
    arch = int(sm.rstrip("af"))
    flags = 0x11 | (0x100000 if sm.endswith("a") else 0) | (0x200000 if sm.endswith("f") else 0)
    major, _, minor = isa.partition(".")
    head = struct.pack(
        "<HHIQI4xHHI8xQ8xQ",
        _ENTRY_KIND[kind],
        0x0101,
        0x40,
        0,
        0,
        int(minor),
        int(major),
        arch,
        flags,
        0,
    )
    return head.ljust(0x40, b"\0")


def fatbin(*, sass: Sequence[str] = (), ptx: Sequence[str] = (), isa: str = "1.0") -> bytes:
    """A one-container fatbinary with an entry per SASS and PTX arch (PTX of ISA ``isa``)."""
    body = b"".join(fatbin_entry("sass", sm) for sm in sass)
    body += b"".join(fatbin_entry("ptx", sm, isa) for sm in ptx)
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 0x10, len(body)) + body


def cuda_elf(
    *,
    sass: Sequence[str] = (),
    ptx: Sequence[str] = (),
    needed: Sequence[str] = ("libcudart.so.13",),
    undefined: Sequence[str] = ("cudaLaunchKernel",),
    soname: str | None = None,
    isa: str = "1.0",
) -> bytes:
    """A CUDA extension: device code for ``sass``/``ptx`` (of PTX ISA ``isa``) in
    ``.nv_fatbin``, linked to ``needed``."""
    sections = {".nv_fatbin": fatbin(sass=sass, ptx=ptx, isa=isa)} if (sass or ptx) else {}
    return make_elf(needed=needed, undefined=undefined, soname=soname, sections=sections)
