"""One Python process as ld.so builds it: the objects loaded, and how each library name asked
for is found (the rules of ``data/loader.toml``, in order: already loaded, a path, DT_RPATH of
the chain of loaders, LD_LIBRARY_PATH, DT_RUNPATH, the loader cache, the default directories).

A :class:`Process` starts empty; :meth:`Process.load` adds an object and its needs, breadth
first, as ``_dl_map_object_deps`` does, and returns them in that order (the object's lookup
scope). Nothing is executed: files are read through the machine's
:class:`~cuship.machine.loader.LibraryFiles`. A library known only by SONAME
(``CUSHIP_CUDA_LIBS``, a torch given by ``CUSHIP_TORCH``) is a node whose symbols are unknown.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field

from cuship.machine.loader import LibraryFacts, LoaderView
from cuship.wheel.cudalibs import is_nvidia_lib
from cuship.wheel.read.elf import VersionNeed
from cuship.wheel.read.symbols import SymbolTable

__all__ = ["Missing", "Node", "Process", "expand"]

_MAX_NODES = 4000  # objects one process may load before the emulation stops
_CACHE = "\0cache"  # the place of the loader cache among the directories


@dataclass(eq=False, slots=True)
class Node:
    """One loaded object. ``symbols`` None with ``known`` False: a library known by name
    only, whose definitions cannot be looked up."""

    name: str  # the name it was first asked for (or its path)
    path: str | None
    soname: str | None
    needed: tuple[str, ...] = ()
    rpath: tuple[str, ...] = ()
    runpath: tuple[str, ...] = ()
    nodeflib: bool = False
    symbols: SymbolTable | None = None
    known: bool = True
    versions: tuple[VersionNeed, ...] = ()
    how: str = ""  # how it was found: "DT_RUNPATH $ORIGIN/../lib", "ld.so.cache", ...
    loader: Node | None = None  # the object whose need loaded it
    names: set[str] = field(default_factory=set)
    scope: str = "local"  # "global": in the global lookup scope

    @property
    def origin(self) -> str | None:
        return None if self.path is None else posixpath.dirname(self.path)

    @property
    def label(self) -> str:
        return self.soname or posixpath.basename(self.path or self.name)


@dataclass(frozen=True, slots=True)
class Missing:
    """A library name nothing provides, and the object that needs it."""

    name: str
    needed_by: str
    looked: tuple[str, ...]  # the directories searched, in order
    stale: str | None = None  # a directory ld.so.conf names that has it, missing from the cache


def expand(entry: str, origin: str | None, view: LoaderView) -> str | None:
    """``$ORIGIN``, ``$LIB`` and ``$PLATFORM`` (or ``${...}``) in one search path entry; None
    when ``$ORIGIN`` is asked for and the object's directory is not known."""
    text = entry
    for token, value in (("ORIGIN", origin), ("LIB", view.lib), ("PLATFORM", view.platform)):
        if f"${token}" not in text and f"${{{token}}}" not in text:
            continue
        if value is None:
            return None
        text = text.replace(f"${{{token}}}", value).replace(f"${token}", value)
    return posixpath.normpath(text)


class Process:
    """The objects one process has loaded, and the searches that load more."""

    def __init__(self, view: LoaderView, main: Node | None = None) -> None:
        self.view = view
        self.main = main
        self.nodes: list[Node] = []
        self._by_name: dict[str, Node] = {}
        self._by_path: dict[str, Node] = {}
        self.missing: list[Missing] = []

    def fork(self) -> Process:
        """A copy of this process (the nodes shared), to load more into as if alone."""
        twin = Process(self.view, self.main)
        twin.nodes = list(self.nodes)
        twin._by_name = dict(self._by_name)
        twin._by_path = dict(self._by_path)
        return twin

    # --- loading --------------------------------------------------------------------------

    def add(self, node: Node) -> Node:
        """Record ``node`` as loaded (by its names, SONAME and real path)."""
        self.nodes.append(node)
        for name in (node.name, node.soname, *node.names):
            if name:
                self._by_name.setdefault(name, node)
        if node.path is not None:
            self._by_path.setdefault(self.view.files.real(node.path), node)
        return node

    def load(self, root: Node, *, scope: str = "local") -> list[Node]:
        """Load ``root`` (already made) and its needs, breadth first; returns the lookup scope
        of ``root``: itself, then its needs in the order ld.so puts them."""
        if root.path is not None and self.view.files.real(root.path) in self._by_path:
            root = self._by_path[self.view.files.real(root.path)]
        elif root not in self.nodes:
            root.scope = scope
            self.add(root)
        order, seen = [root], {id(root)}
        for node in order:
            for name in node.needed:
                found = self.find(name, node)
                if found is None:
                    continue
                if scope == "global":
                    found.scope = "global"
                if id(found) not in seen and len(order) < _MAX_NODES:
                    seen.add(id(found))
                    order.append(found)
        return order

    def find(self, name: str, requester: Node, *, extra: Sequence[str] = ()) -> Node | None:
        """The object ``name`` names for ``requester`` (loaded now if need be); None, and a
        :class:`Missing` recorded, when nothing provides it. ``extra``: directories searched
        after the loader's own (cuda-pathfinder's NVIDIA wheel directories)."""
        known = self._by_name.get(name)
        if known is not None:
            return known
        if "/" in name:
            found = self._open(name, name, requester, "a path")
            if found is None:
                self._lost(name, requester, ())
            return found
        looked: list[str] = []
        for directory, how in self._directories(requester, extra):
            if directory == _CACHE:
                cached = self.view.cache.where(name) if self.view.cache is not None else None
                looked.append(self.view.cache_source.split(" ", 1)[0])
                found = None if cached is None else self._open(cached, name, requester, how)
            else:
                looked.append(directory)
                found = self._open(posixpath.join(directory, name), name, requester, how)
            if found is not None:
                return found
        virtual = self.view.virtual.get(name)
        if virtual is not None and not requester.nodeflib:
            node = Node(name=name, path=None, soname=name, known=False, how=virtual)
            node.loader = requester
            return self.add(node)
        self._lost(name, requester, tuple(looked))
        return None

    def _lost(self, name: str, requester: Node, looked: tuple[str, ...]) -> None:
        stale = next(
            (d for d in self.view.conf_dirs if self.view.files.is_file(posixpath.join(d, name))),
            None,
        )
        self.missing.append(
            Missing(name=name, needed_by=requester.label, looked=looked, stale=stale)
        )
        return None

    def _open(self, path: str, name: str, requester: Node, how: str) -> Node | None:
        if self.view.described and is_nvidia_lib(name):
            return None  # the machine's NVIDIA libraries are the described ones
        if not self.view.files.is_file(path):
            return None
        real = self.view.files.real(path)
        if real in self._by_path:
            node = self._by_path[real]
            node.names.add(name)
            self._by_name.setdefault(name, node)
            return node
        facts = self.view.files.library(path)
        if facts is None:  # not ELF, or of another class: ld.so goes on searching
            return None
        node = node_of(facts, path=path, name=name, how=how)
        node.loader = requester
        return self.add(node)

    # --- where ld.so looks ----------------------------------------------------------------

    def _directories(self, requester: Node, extra: Sequence[str]) -> list[tuple[str, str]]:
        """Where to look, in ld.so's order; :data:`_CACHE` stands for the loader cache."""
        view = self.view
        dirs: list[tuple[str, str]] = []
        if not requester.runpath:
            dirs += self._rpaths(requester)
        dirs += [(d, "LD_LIBRARY_PATH") for d in view.library_path]
        dirs += _expanded(requester.runpath, requester, view, "DT_RUNPATH")
        if not requester.nodeflib:
            if view.cache is not None:
                dirs.append((_CACHE, "the loader cache"))
            dirs += [(d, "a default directory") for d in view.default_dirs]
        dirs += [(d, "cuda-pathfinder (NVIDIA's wheels)") for d in extra]
        return dirs

    def _rpaths(self, requester: Node) -> list[tuple[str, str]]:
        dirs: list[tuple[str, str]] = []
        chain: Node | None = requester
        seen_main = False
        while chain is not None:
            dirs += _expanded(chain.rpath, chain, self.view, f"DT_RPATH of {chain.label}")
            seen_main |= chain is self.main
            chain = chain.loader
        if not seen_main and self.main is not None:
            dirs += _expanded(self.main.rpath, self.main, self.view, "DT_RPATH of the executable")
        return dirs


def _expanded(
    entries: Sequence[str], node: Node, view: LoaderView, how: str
) -> list[tuple[str, str]]:
    found = []
    for entry in entries:
        directory = expand(entry, node.origin, view)
        if directory is not None:
            found.append((directory, f"{how} {entry}"))
    return found


def node_of(facts: LibraryFacts, *, path: str, name: str, how: str) -> Node:
    """The node of a library read from its file."""
    elf = facts.facts
    return Node(
        name=name,
        path=path,
        soname=elf.soname,
        needed=elf.needed,
        rpath=elf.rpath,
        runpath=elf.runpath,
        nodeflib=elf.nodeflib,
        symbols=facts.symbols,
        versions=elf.versions,
        how=how,
        names={name},
    )
