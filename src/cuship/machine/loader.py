"""How a machine's dynamic loader finds libraries: the rules (``data/loader.toml``, each with its
source), and one machine's view of them (:class:`LoaderView`): ``LD_LIBRARY_PATH``, the loader
cache, the default directories and ``$LIB`` of its layout, its site directories, its Python
interpreter, and a way to read the libraries' ELF facts (:class:`LibraryFiles`).

The view describes the machine being judged: this host by default; ``CUSHIP_LD_CACHE`` names
another cache (``none``: as ``ld.so --inhibit-cache``), and ``CUSHIP_CUDA_LIBS`` names NVIDIA
libraries that the machine has but whose files cuship cannot read (:attr:`LoaderView.virtual`:
found by SONAME, their symbols unknown). The judge's emulation of ld.so is
:mod:`cuship.judge.ldso`.
"""

from __future__ import annotations

import functools
import mmap
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from cuship import schema, settings
from cuship._read import open_regular
from cuship.errors import CushipError
from cuship.machine.ldcache import LdCache, conf_dirs, parse_cache
from cuship.machine.probe import Probe
from cuship.schema import field_doc
from cuship.wheel.read.elf import ElfFacts, quick_facts
from cuship.wheel.read.symbols import SymbolTable, symbol_table

__all__ = [
    "DATA_FILE",
    "HostFiles",
    "LibraryFacts",
    "LibraryFiles",
    "LoaderFile",
    "LoaderView",
    "loader_rules",
    "loader_view",
]

DATA_FILE = Path(__file__).parent.parent / "data" / "loader.toml"


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchStep:
    """One step of ld.so's search for a library, in order."""

    step: str = field_doc("Its name: loaded, path, rpath, library_path, runpath, cache, default.")
    rule: str = field_doc("What the loader does at this step.")
    source: str = field_doc("The manual page or glibc source that says so.")


@dataclass(frozen=True, slots=True, kw_only=True)
class Token:
    """A dynamic string token of DT_RPATH/DT_RUNPATH (``$ORIGIN``)."""

    name: str = field_doc("ORIGIN, LIB or PLATFORM.")
    rule: str = field_doc("What it expands to.")
    source: str = field_doc("Where that is said.")


@dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    """A system layout: where ld.so looks by default, and what ``$LIB`` is."""

    name: str = field_doc("The layout's name.")
    marker: str = field_doc("A file that exists only in this layout (its libc).")
    default_dirs: tuple[str, ...] = field_doc("The default directories, in order.", non_empty=True)
    lib: str = field_doc("What $LIB expands to.")
    source: str = field_doc("Where the directories are read from.")


@dataclass(frozen=True, slots=True, kw_only=True)
class Preload:
    """What is loaded before a package's own objects when Python imports it."""

    name: str = field_doc("What loads it: interpreter, torch, torch._C, cuda-pathfinder.")
    when: str = field_doc("When it applies.")
    libraries: tuple[str, ...] = field_doc("The files it loads, relative to a site directory.")
    scope: str = field_doc("global, local (found again by SONAME) or opened (dlopen by name).")
    source: str = field_doc("Where the behaviour is written.")


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """A rule of symbol binding."""

    rule: str = field_doc("The rule.")
    source: str = field_doc("Where it is written.")


@dataclass(frozen=True, slots=True, kw_only=True)
class Unmodelled:
    """What cuship's emulation leaves out, and why."""

    what: str = field_doc("What is not modelled.")
    why: str = field_doc("Why that is acceptable, or what it makes the judge say.")


@dataclass(frozen=True, slots=True, kw_only=True)
class LoaderFile:
    """loader.toml: how ld.so finds and binds libraries, as cuship's judge emulates it."""

    search: tuple[SearchStep, ...] = field_doc("The search steps, in order.", non_empty=True)
    token: tuple[Token, ...] = field_doc("The dynamic string tokens.", non_empty=True)
    layout: tuple[Layout, ...] = field_doc("The system layouts.", non_empty=True)
    preload: tuple[Preload, ...] = field_doc("What an import loads first.", non_empty=True)
    bind: tuple[Rule, ...] = field_doc("The binding rules.", non_empty=True)
    unmodelled: tuple[Unmodelled, ...] = field_doc("What is left out.", default=())


@functools.cache
def loader_rules() -> LoaderFile:
    """The shipped ``data/loader.toml``."""
    raw = schema.read_toml(DATA_FILE)
    return schema.load(LoaderFile, raw, source=str(DATA_FILE), strict=True)


# --- the libraries' files -------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class LibraryFacts:
    """What ld.so reads of one library file: its dynamic section, what it imports, and its
    symbol table for lookups (None: no dynamic symbols)."""

    path: str
    facts: ElfFacts
    symbols: SymbolTable | None


class LibraryFiles(Protocol):
    """The machine's files as the loader sees them."""

    def is_file(self, path: str) -> bool: ...

    def listdir(self, path: str) -> tuple[str, ...]: ...

    def real(self, path: str) -> str: ...

    def library(self, path: str) -> LibraryFacts | None: ...


class HostFiles:
    """This host's files; each library is read once (an mmap kept open for its lookups)."""

    def __init__(self) -> None:
        self._read: dict[str, LibraryFacts | None] = {}

    def is_file(self, path: str) -> bool:
        return Path(path).is_file()

    def listdir(self, path: str) -> tuple[str, ...]:
        try:
            return tuple(sorted(entry.name for entry in Path(path).iterdir()))
        except OSError:
            return ()

    def real(self, path: str) -> str:
        return str(Path(path).resolve())

    def library(self, path: str) -> LibraryFacts | None:
        key = self.real(path)
        if key not in self._read:
            self._read[key] = _read_library(key)
        return self._read[key]


def _read_library(path: str) -> LibraryFacts | None:
    """The facts of the ELF file at ``path`` (mapped, and kept mapped for its lookups); None
    when it cannot be read as one (not a regular file, empty, not ELF)."""
    try:
        fd = open_regular(path, "shared object")
    except (CushipError, OSError):
        return None
    try:
        data = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    try:
        facts = quick_facts(data, source=path)
        return LibraryFacts(path=path, facts=facts, symbols=symbol_table(data, source=path))
    except CushipError:
        return None


# --- one machine's view ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class LoaderView:
    """One machine's loader (see the module)."""

    library_path: tuple[str, ...] = ()  # LD_LIBRARY_PATH
    cache: LdCache | None = None  # None: no cache read (inhibited, or none there)
    cache_source: str = "none"
    default_dirs: tuple[str, ...] = ()
    conf_dirs: tuple[str, ...] = ()  # what ld.so.conf names (what ldconfig would cache)
    lib: str = "lib64"
    platform: str = "x86_64"
    site_dirs: tuple[str, ...] = ()
    interpreter: str | None = None  # the Python executable: its needs are the global scope
    virtual: Mapping[str, str] = field(default_factory=dict)  # SONAME -> where, files unread
    # CUSHIP_CUDA_LIBS describes the NVIDIA libraries: those on this host's disk are not the
    # judged machine's, and only ``virtual`` ones are found.
    described: bool = False
    files: LibraryFiles = field(default_factory=HostFiles, compare=False, repr=False)

    def to_json(self) -> dict[str, object]:
        return {
            "library_path": list(self.library_path),
            "cache": self.cache_source,
            "default_dirs": list(self.default_dirs),
            "lib": self.lib,
            "platform": self.platform,
            "site_dirs": list(self.site_dirs),
            "interpreter": self.interpreter,
            "virtual": dict(self.virtual),
            "described": self.described,
        }


def loader_view(
    env: Mapping[str, str],
    probe: Probe,
    site_dirs: tuple[str, ...],
    *,
    machine: str,
    virtual: Mapping[str, str] | None = None,
) -> LoaderView:
    """This host's loader as ``env`` sets it (``LD_LIBRARY_PATH``, ``CUSHIP_LD_CACHE``)."""
    layout = _layout(probe)
    cache, source = _cache(env, probe, machine)
    return LoaderView(
        library_path=tuple(p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p),
        cache=cache,
        cache_source=source,
        default_dirs=layout.default_dirs,
        conf_dirs=conf_dirs(probe.read, probe.listdir),
        lib=layout.lib,
        platform=machine,
        site_dirs=site_dirs,
        interpreter=sys.executable or None,
        virtual=dict(virtual or {}),
        described=virtual is not None,
    )


def _layout(probe: Probe) -> Layout:
    layouts = loader_rules().layout
    for layout in layouts:
        folder, _, name = layout.marker.rpartition("/")
        if name in probe.listdir(folder):
            return layout
    return layouts[-1]


def _cache(env: Mapping[str, str], probe: Probe, machine: str) -> tuple[LdCache | None, str]:
    wanted = env.get(settings.LD_CACHE, "/etc/ld.so.cache")
    if wanted.strip().lower() == "none":
        return None, f"none ({settings.LD_CACHE}=none)"
    data = probe.read_bytes(wanted)
    if data is None:
        return None, f"none ({wanted} could not be read)"
    cache = parse_cache(data, machine=machine)
    if cache is None:
        return None, f"none ({wanted} is not a loader cache)"
    return cache, f"{wanted} ({cache.layout}, {len(cache.entries)} entries)"
