"""Synthetic ELF shared libraries for the loader's tests: what ld.so reads to find and bind one.

:func:`shared_library` writes a 64-bit little-endian ``ET_DYN`` with ``.dynstr``, ``.dynsym``,
``.dynamic`` (DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH, DT_FLAGS_1), the version tables
(``.gnu.version``, ``.gnu.version_r`` for the versions it needs, ``.gnu.version_d`` for those it
defines, the base version first as ld emits it), a symbol hash table (``.gnu.hash``, the SysV
``.hash`` or none) and ``.rodata``. Symbols are laid out as the GNU hash table wants: the
undefined ones first, then the defined ones, which the table covers. Defined symbols have a
value (ld.so skips a definition of value 0).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Literal

from cuship.machine.loader import LibraryFacts
from cuship.wheel.read.symbols import gnu_hash, sysv_hash

__all__ = ["MemoryFiles", "shared_library"]

_SHT = {"progbits": 1, "strtab": 3, "hash": 5, "dynamic": 6, "dynsym": 11}
_SHT_GNU_HASH, _SHT_VERDEF, _SHT_VERNEED, _SHT_VERSYM = (
    0x6FFFFFF6,
    0x6FFFFFFD,
    0x6FFFFFFE,
    0x6FFFFFFF,
)
_DT = {"needed": 1, "soname": 14, "rpath": 15, "runpath": 29, "flags_1": 0x6FFFFFFB}
_FUNC_GLOBAL, _FUNC_WEAK = 0x12, 0x22


class _Strings:
    def __init__(self) -> None:
        self.data = bytearray(b"\0")
        self._at: dict[str, int] = {}

    def add(self, text: str) -> int:
        if text not in self._at:
            self._at[text] = len(self.data)
            self.data += text.encode() + b"\0"
        return self._at[text]


def _symbol(name: int, info: int, shndx: int, value: int) -> bytes:
    return struct.pack("<IBBHQQ", name, info, 0, shndx, value, 0)


def _verneed(dynstr: _Strings, needs: Mapping[str, list[tuple[str, int, bool]]]) -> bytes:
    out = b""
    libraries = list(needs)
    for number, library in enumerate(libraries):
        wanted = needs[library]
        size = 16 + 16 * len(wanted)
        following = 0 if number == len(libraries) - 1 else size
        out += struct.pack("<HHIII", 1, len(wanted), dynstr.add(library), 16, following)
        for position, (version, index, weak) in enumerate(wanted):
            after = 0 if position == len(wanted) - 1 else 16
            flags = 0x2 if weak else 0
            out += struct.pack(
                "<IHHII", sysv_hash(version.encode()), flags, index, dynstr.add(version), after
            )
    return out


def _verdef(dynstr: _Strings, names: Sequence[str]) -> bytes:
    out = b""
    for number, name in enumerate(names, start=1):
        following = 0 if number == len(names) else 28
        flags = 1 if number == 1 else 0  # VER_FLG_BASE: the file's own name
        out += struct.pack("<HHHHIII", 1, flags, number, 1, sysv_hash(name.encode()), 20, following)
        out += struct.pack("<II", dynstr.add(name), 0)
    return out


def _gnu_hash_table(names: Sequence[str], first: int) -> bytes:
    """One bucket holding every defined symbol; a Bloom word that lets every name through."""
    if not names:
        return struct.pack("<IIII", 1, first, 1, 6) + b"\xff" * 8 + struct.pack("<I", 0)
    chain = [gnu_hash(n.encode()) & ~1 for n in names]
    chain[-1] |= 1
    head = struct.pack("<IIII", 1, first, 1, 6) + b"\xff" * 8 + struct.pack("<I", first)
    return head + b"".join(struct.pack("<I", value) for value in chain)


def _sysv_hash_table(count: int) -> bytes:
    """One bucket chaining every symbol, last to first."""
    chains = [0] + [index - 1 for index in range(1, count)]
    return (
        struct.pack("<II", 1, count)
        + struct.pack("<I", count - 1)
        + b"".join(struct.pack("<I", c) for c in chains)
    )


def shared_library(
    *,
    soname: str | None = None,
    needed: Sequence[str] = (),
    rpath: str | None = None,
    runpath: str | None = None,
    nodeflib: bool = False,
    imports: Sequence[str] = (),
    weak: Sequence[str] = (),
    versioned_imports: Sequence[tuple[str, str, str]] = (),
    weak_versions: Sequence[str] = (),
    defines: Sequence[str] = (),
    versioned_defines: Sequence[tuple[str, str]] = (),
    hidden_defines: Sequence[tuple[str, str]] = (),
    version_defs: Sequence[str] = (),
    rodata: bytes = b"",
    hash_table: Literal["gnu", "sysv", "none"] = "gnu",
    sections: Mapping[str, bytes] | None = None,
) -> bytes:
    """The bytes of a library (see the module). ``versioned_imports``: (symbol, library,
    version); ``versioned_defines``/``hidden_defines``: (symbol, version) defined as the
    default ``@@`` or a hidden ``@`` version; ``version_defs``: the versions it defines (its
    SONAME is the base version written before them when it has any)."""
    dynstr, shstr = _Strings(), _Strings()
    defs = ([soname or "lib.so"] if version_defs else []) + list(version_defs)
    def_index = {name: i for i, name in enumerate(defs, start=1)}
    needs, need_index = _needs(versioned_imports, weak_versions, len(defs))
    rows: list[tuple[str, int, int, int, int]] = []  # name, info, shndx, value, versym
    rows += [(n, _FUNC_GLOBAL, 0, 0, 1) for n in imports]
    rows += [(n, _FUNC_WEAK, 0, 0, 1) for n in weak]
    rows += [(n, _FUNC_GLOBAL, 0, 0, need_index[(lib, v)]) for n, lib, v in versioned_imports]
    first = 1 + len(rows)
    rows += [(n, _FUNC_GLOBAL, 1, 0x1000 + i, 1) for i, n in enumerate(defines)]
    rows += [(n, _FUNC_GLOBAL, 1, 0x2000, def_index[v]) for n, v in versioned_defines]
    rows += [(n, _FUNC_GLOBAL, 1, 0x3000, def_index[v] | 0x8000) for n, v in hidden_defines]
    symbols = _symbol(0, 0, 0, 0) + b"".join(
        _symbol(dynstr.add(name), info, shndx, value) for name, info, shndx, value, _ in rows
    )
    dynamic = _dynamic(
        dynstr, needed, (("soname", soname), ("rpath", rpath), ("runpath", runpath)), nodeflib
    )
    extra = _hash_section(hash_table, rows, first)
    if needs or defs:
        versym = struct.pack("<H", 0) + b"".join(struct.pack("<H", v) for *_, v in rows)
        extra.append((".gnu.version", _SHT_VERSYM, versym, 2, 0, 2))
    if needs:
        extra.append((".gnu.version_r", _SHT_VERNEED, _verneed(dynstr, needs), 1, len(needs), 0))
    if defs:
        extra.append((".gnu.version_d", _SHT_VERDEF, _verdef(dynstr, defs), 1, len(defs), 0))
    if rodata:
        extra.append((".rodata", _SHT["progbits"], rodata, 0, 0, 0))
    extra += [(name, _SHT["progbits"], data, 0, 0, 0) for name, data in (sections or {}).items()]
    return _assemble(dynstr, shstr, symbols, dynamic, extra)


_Section = tuple[str, int, bytes, int, int, int]  # name, type, data, link, info, entsize


def _needs(
    versioned_imports: Sequence[tuple[str, str, str]], weak_versions: Sequence[str], defs: int
) -> tuple[dict[str, list[tuple[str, int, bool]]], dict[tuple[str, str], int]]:
    """The versions needed per library, numbered after the ``defs`` versions defined."""
    needs: dict[str, list[tuple[str, int, bool]]] = {}
    index: dict[tuple[str, str], int] = {}
    for _symbol_name, library, version in versioned_imports:
        if (library, version) not in index:
            index[(library, version)] = defs + 2 + len(index)
            weak = version in weak_versions
            needs.setdefault(library, []).append((version, index[(library, version)], weak))
    return needs, index


def _dynamic(
    dynstr: _Strings,
    needed: Sequence[str],
    texts: Sequence[tuple[str, str | None]],
    nodeflib: bool,
) -> bytes:
    dynamic = b"".join(struct.pack("<qQ", _DT["needed"], dynstr.add(lib)) for lib in needed)
    for key, text in texts:
        if text is not None:
            dynamic += struct.pack("<qQ", _DT[key], dynstr.add(text))
    if nodeflib:
        dynamic += struct.pack("<qQ", _DT["flags_1"], 0x800)
    return dynamic + struct.pack("<qQ", 0, 0)


def _hash_section(
    kind: str, rows: Sequence[tuple[str, int, int, int, int]], first: int
) -> list[_Section]:
    if kind == "gnu":
        defined = [name for name, _, shndx, _, _ in rows if shndx]
        return [(".gnu.hash", _SHT_GNU_HASH, _gnu_hash_table(defined, first), 2, 0, 0)]
    if kind == "sysv":
        return [(".hash", _SHT["hash"], _sysv_hash_table(1 + len(rows)), 2, 0, 4)]
    return []


def _assemble(
    dynstr: _Strings,
    shstr: _Strings,
    symbols: bytes,
    dynamic: bytes,
    extra: list[_Section],
) -> bytes:
    base = [
        (".dynstr", _SHT["strtab"], bytes(dynstr.data), 0, 0, 0),
        (".dynsym", _SHT["dynsym"], symbols, 1, 1, 24),
        (".dynamic", _SHT["dynamic"], dynamic, 1, 0, 16),
    ]
    every = [*base, *extra, (".shstrtab", _SHT["strtab"], b"", 0, 0, 0)]
    names = [shstr.add(name) for name, *_ in every]
    every[-1] = (".shstrtab", _SHT["strtab"], bytes(shstr.data), 0, 0, 0)
    offsets, position, blobs = [], 64, []
    for _, _, data, *_ in every:
        position += -position % 8
        offsets.append(position)
        blobs.append((position, data))
        position += len(data)
    shoff = position + (-position % 8)
    body = bytearray(shoff - 64)
    for at, data in blobs:
        body[at - 64 : at - 64 + len(data)] = data
    headers = b"\0" * 64 + b"".join(
        struct.pack(
            "<IIQQQQIIQQ", names[i], kind, 0, 0, offsets[i], len(data), link, info, 8, entsize
        )
        for i, (_, kind, data, link, info, entsize) in enumerate(every)
    )
    ident = b"\x7fELF" + bytes([2, 1, 1]) + b"\0" * 9
    header = ident + struct.pack(
        "<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 56, 0, 64, len(every) + 1, len(every)
    )
    return header + bytes(body) + headers


class MemoryFiles:
    """A machine's files held in memory for the loader (``cuship.machine.loader.LibraryFiles``):
    a path -> bytes map, symbolic links by path."""

    def __init__(self, files: Mapping[str, bytes], links: Mapping[str, str] | None = None) -> None:
        self.files = dict(files)
        self.links = dict(links or {})

    def real(self, path: str) -> str:
        import posixpath

        path = posixpath.normpath(path)
        for _ in range(16):
            target = self.links.get(path)
            if target is None:
                return path
            path = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
        return path

    def is_file(self, path: str) -> bool:
        return self.real(path) in self.files

    def listdir(self, path: str) -> tuple[str, ...]:
        import posixpath

        folder = posixpath.normpath(path).rstrip("/") + "/"
        names = {
            p[len(folder) :].split("/", 1)[0]
            for p in [*self.files, *self.links]
            if p.startswith(folder)
        }
        return tuple(sorted(names))

    def library(self, path: str) -> LibraryFacts | None:
        from cuship.errors import CushipError
        from cuship.wheel.read.elf import quick_facts
        from cuship.wheel.read.symbols import symbol_table

        data = self.files.get(self.real(path))
        if data is None:
            return None
        try:
            facts = quick_facts(data, source=path, wanted=(".rodata", ".nv_fatbin"))
            return LibraryFacts(path=path, facts=facts, symbols=symbol_table(data, source=path))
        except CushipError:
            return None
