"""Import a project's declaration modules (check ops, benchmark cases) and collect what they declare.

``cuship check`` and ``cuship bench`` both read user modules named in config: a path relative to
the project (``checks/ops.py``) or a dotted name. Each declared object is a frozen dataclass with
a ``name`` and the ``module`` it came from; names must be unique across modules.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import traceback
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol, TypeVar

from cuship.errors import ConfigError, InputError

__all__ = ["Kind", "append_path", "discover", "load_module"]


class _Declared(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def module(self) -> str: ...


T = TypeVar("T", bound=_Declared)


@dataclass(frozen=True, slots=True, kw_only=True)
class Kind:
    """How messages name one kind of declaration module."""

    what: str  # "check module", "benchmark module"
    section: str  # "[check] modules"
    item: str  # "op", "case"
    prefix: str  # sys.modules prefix of modules imported from a path
    import_hint: str  # what to do when the module raises on import


def _module_name(path: Path, prefix: str) -> str:
    digest = zlib.crc32(str(path).encode()) & 0xFFFFFFFF
    return f"{prefix}_{path.stem}_{digest:08x}"


def _from_path(entry: str, root: Path, kind: Kind) -> ModuleType:
    path = (root / entry).resolve()
    if not path.is_file():
        raise InputError(
            f"{kind.what} {entry!r} not found at {str(path)!r}",
            hint=f"list paths relative to the project in {kind.section}",
        )
    name = _module_name(path, kind.prefix)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]  # a fixed file is imported afresh next time
        raise
    return module


def load_module(entry: str, root: Path, kind: Kind) -> ModuleType:
    """Import ``entry``: a path (``checks/ops.py``) relative to ``root``, or a dotted name."""
    try:
        if entry.endswith(".py") or "/" in entry:
            return _from_path(entry, root, kind)
        return importlib.import_module(entry)
    except InputError:
        raise
    except Exception as err:
        tail = "".join(traceback.format_exception(err)[-3:]).strip()
        raise InputError(
            f"{kind.what} {entry!r} failed to import: {type(err).__name__}: {err}\n{tail}",
            hint=kind.import_hint,
        ) from err


def _declared_in(module: ModuleType, cls: type[Any], entry: str) -> list[Any]:
    found: list[Any] = []
    for value in vars(module).values():
        if isinstance(value, cls):
            found.append(value)
        elif isinstance(value, tuple | list) and value and all(isinstance(v, cls) for v in value):
            found.extend(value)
    return [replace(item, module=entry) for item in found]


def _resolved(entry: str) -> Path:
    return Path(entry or os.curdir).resolve()


def append_path(pythonpath: Sequence[Path], root: Path | None = None) -> None:
    """Put the project's directories after everything else on sys.path (site-packages included).

    Entries already there that point into the project (``python -m`` puts the working directory,
    often the project root, first) are moved to the end too, so a source tree never shadows the
    installed build; the root stays on the path only when ``pythonpath`` names it.
    """
    project = {d.resolve() for d in pythonpath} | ({root.resolve()} if root is not None else set())
    kept = [entry for entry in sys.path if _resolved(entry) not in project]
    tail = [str(d) for d in dict.fromkeys(pythonpath)]
    sys.path[:] = kept + tail


def discover(
    modules: Sequence[str], root: Path, pythonpath: Sequence[Path], cls: type[T], kind: Kind
) -> tuple[T, ...]:
    """Import the modules and return the ``cls`` objects they declare, in order, names unique.

    The ``pythonpath`` directories go at the END of sys.path, after site-packages: the installed
    build of the project (with its compiled extension) is what gets checked and timed, and the
    source tree serves only modules that are not importable otherwise.
    """
    append_path(pythonpath, root)
    seen: dict[str, T] = {}
    for entry in modules:
        for item in _declared_in(load_module(entry, root, kind), cls, entry):
            if item.name in seen and seen[item.name].module != entry:
                raise ConfigError(
                    entry,
                    item.name,
                    f"{kind.item} {item.name!r} is also declared in {seen[item.name].module!r}",
                    hint=f"give each {kind.item} a unique name",
                )
            seen.setdefault(item.name, item)
    return tuple(seen.values())
