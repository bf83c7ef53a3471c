"""Binding as ``dlopen(RTLD_NOW)`` does it (``[[bind]]`` of ``data/loader.toml``): each version
an object needs of a library must be one that library defines, and each undefined symbol that
is not weak must be defined in the object's lookup scope (the global scope, then the object and
its needs, breadth first).

A symbol that no library of known symbols defines, where a library known only by name is in the
scope, might be defined there: it is counted as unknown, never as bound or as missing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from cuship.judge.ldso.process import Node
from cuship.wheel.cudalibs import is_nvidia_lib, library_stem
from cuship.wheel.read.elf import ElfFacts
from cuship.wheel.read.symbols import gnu_hash

__all__ = ["DRIVER", "Binding", "bind"]

DRIVER = "the NVIDIA driver"  # how a described machine's driver libraries are found
# The API an NVIDIA library known only by name is taken to define: the driver's (libcuda, NVML,
# NVCUVID) and, for a library CUSHIP_CUDA_LIBS names, the names of its own API (cublas* for
# libcublas, cuda* for libcudart). Anything else it would have to define stays unknown.
_DRIVER_API = re.compile(r"^(?:cu[A-Z]|cuvid|nvml[A-Z])")
_API_OF = {"libcudart": ("cuda", "__cuda"), "libcuda": ("cu",), "libnvidia-ml": ("nvml",)}


def _api(node: Node) -> tuple[str, ...]:
    """The symbol prefixes a library known by name is taken to define (see above)."""
    if node.known:
        return ()
    if node.how == DRIVER:
        return ("cu", "nvml")
    stem = library_stem(node.soname or node.name)
    if not is_nvidia_lib(stem + ".so"):
        return ()
    return _API_OF.get(stem, (stem.removeprefix("lib"),))


@dataclass(slots=True)
class Binding:
    """The outcome of binding one object."""

    bound: int = 0
    unbound: list[tuple[str, str | None]] = field(default_factory=list)  # (symbol, version)
    unknown: list[tuple[str, str | None]] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)  # "version `V' not found (required by X)"
    unknown_versions: list[str] = field(default_factory=list)
    expected: dict[str, str] = field(default_factory=dict)  # symbol -> the library asked for


def bind(
    root: Node,
    facts: ElfFacts,
    scope: Sequence[Node],
    memo: dict[tuple[int, str, str | None], bool],
) -> Binding:
    """Bind ``root`` (whose file facts are ``facts``) in ``scope``, the global scope first.
    ``memo`` keeps lookups across objects of one process."""
    result = Binding()
    _versions(root, facts, scope, result)
    wanted = _wanted_versions(facts)
    weak = frozenset(facts.weak)
    searched = [node for node in scope if node is not root]
    apis = tuple(prefix for node in searched for prefix in _api(node))
    unknown_scope = any(not node.known and not _api(node) for node in searched)
    driver = any(node.how == DRIVER for node in searched)
    for name in facts.undefined:
        if name in weak:
            continue
        version, library = wanted.get(name, (None, None))
        if library is not None:
            result.expected[name] = library
        if (
            _defined(name, version, searched, memo)
            or (driver and _DRIVER_API.match(name) is not None)
            or (bool(apis) and name.startswith(apis))
        ):
            result.bound += 1
        elif unknown_scope:
            result.unknown.append((name, version))
        else:
            result.unbound.append((name, version))
    return result


def _wanted_versions(facts: ElfFacts) -> dict[str, tuple[str, str]]:
    found: dict[str, tuple[str, str]] = {}
    for need in facts.versions:
        for symbol in need.symbols:
            found.setdefault(symbol, (need.version, need.library))
    return found


def _defined(
    name: str,
    version: str | None,
    scope: Sequence[Node],
    memo: dict[tuple[int, str, str | None], bool],
) -> bool:
    raw = name.encode()
    hashed: int | None = None
    for node in scope:
        table = node.symbols
        if table is None:
            continue
        key = (id(table), name, version)
        hit = memo.get(key)
        if hit is None:
            if hashed is None:
                hashed = gnu_hash(raw)
            hit = table.defines_raw(raw, version, hashed)
            memo[key] = hit
        if hit:
            return True
    return False


def _versions(root: Node, facts: ElfFacts, scope: Sequence[Node], result: Binding) -> None:
    """Each version ``root`` needs of a library of its scope, against that library's
    definitions (glibc ``elf/dl-version.c``)."""
    by_name: dict[str, Node] = {}
    for node in scope:
        for name in (node.soname, node.name, *node.names):
            if name:
                by_name.setdefault(name, node)
    for need in facts.versions:
        owner = by_name.get(need.library)
        if owner is None or need.weak:
            continue  # a library not found is said as missing, not here
        if not owner.known:
            result.unknown_versions.append(f"{need.version} of {need.library}")
            continue
        defined = owner.symbols.versions if owner.symbols is not None else frozenset()
        if defined and need.version not in defined:
            result.versions.append(
                f"{need.library}: version `{need.version}' not found (required by {root.label})"
            )
