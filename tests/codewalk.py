"""Walks of ``src/cuship``'s syntax trees for the mechanisms issue 43 holds by construction: every
read of outside input through :mod:`cuship._read` (:func:`reads`), every delete or replace through
:func:`cuship._fs.under` (:func:`destroys`). Each finding is ``module:function:call`` (the
innermost enclosing function, ``<module>`` at the top level), stable across edits of the lines."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from pathlib import Path

import cuship

SRC = Path(cuship.__file__).resolve().parent

# calls that read a file whole, open one, map one, or parse a document
_READ_METHODS = frozenset({"read_text", "read_bytes", "open", "fdopen", "ZipFile", "mmap"})
_PARSERS = frozenset(
    {
        ("json", "load"),
        ("json", "loads"),
        ("tomllib", "load"),
        ("tomllib", "loads"),
        ("yaml", "safe_load"),
        ("yaml", "load"),
        ("pickle", "load"),
        ("pickle", "loads"),
        ("marshal", "loads"),
        ("sqlite3", "connect"),
        ("os", "read"),
        ("metadata", "version"),
        ("metadata", "requires"),
        ("metadata", "files"),
        ("metadata", "metadata"),
    }
)
# receivers whose methods of those names are not file reads: the reader itself, the machine
# probe (it reads through the reader), the results store (SQLite, opened in store/)
_NOT_FILES = frozenset({"_read", "probe", "Store", "self"})
_WRITE_FLAGS = frozenset({"O_WRONLY", "O_CREAT", "O_APPEND", "O_TRUNC"})


def _mode(call: ast.Call, position: int) -> str | None:
    """The literal mode string of an ``open``-like call, if it has one."""
    found = call.args[position] if len(call.args) > position else None
    for keyword in call.keywords:
        if keyword.arg == "mode":
            found = keyword.value
    return found.value if isinstance(found, ast.Constant) and isinstance(found.value, str) else None


def _writes(call: ast.Call, name: str) -> bool:
    """Whether the call opens for writing only (a mode of ``w``/``a``/``x``, write flags)."""
    if name == "os.open":
        flags = {n.attr for n in ast.walk(call) if isinstance(n, ast.Attribute)}
        return bool(flags & _WRITE_FLAGS)
    position = {"open": 1, "os.fdopen": 1, "zipfile.ZipFile": 1, "ZipFile": 1}.get(name, 0)
    if name == ".open" and call.args and not isinstance(call.args[0], ast.Constant):
        return False  # archive.open(info): a member, read
    mode = _mode(call, position)
    return mode is not None and any(c in mode for c in "wax") and "+" not in mode


def _owner(func: ast.Attribute) -> str | None:
    value = func.value
    if isinstance(value, ast.Name):
        return value.id
    if isinstance(value, ast.Attribute):
        return value.attr
    return None


def read_call(call: ast.Call) -> tuple[str, bool] | None:
    """(name, whether it only writes) of a read-like call, None for any other call."""
    func = call.func
    if isinstance(func, ast.Name):
        name = func.id if func.id in ("open", "ZipFile") else None
    elif isinstance(func, ast.Attribute):
        owner = _owner(func)
        if owner in _NOT_FILES:
            return None
        if (owner, func.attr) in _PARSERS:
            name = f"{owner}.{func.attr}"
        elif func.attr in _READ_METHODS:
            module = owner if owner in ("os", "io", "mmap", "zipfile") else None
            name = f"{module}.{func.attr}" if module else f".{func.attr}"  # a method
        else:
            name = None
    else:
        name = None
    return None if name is None else (name, _writes(call, name))


_DELETES = {("shutil", "rmtree"), ("shutil", "move")} | {
    ("os", n) for n in ("remove", "unlink", "rmdir", "replace", "rename", "removedirs")
}


def delete_call(call: ast.Call) -> tuple[str, bool] | None:
    """(name, False) of a call that deletes or replaces a file or tree, None otherwise
    (``Path.replace``/``rename`` are told from ``str.replace`` by their single argument)."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    owner = _owner(func)
    if (owner, func.attr) in _DELETES:
        return f"{owner}.{func.attr}", False
    if func.attr in ("unlink", "rmdir"):
        return func.attr, False
    if func.attr in ("replace", "rename") and len(call.args) == 1 and not call.keywords:
        return func.attr, False
    return None


Finder = Callable[[ast.Call], tuple[str, bool] | None]


def _calls(tree: ast.AST, finder: Finder) -> Iterator[tuple[str, str, bool]]:
    def visit(node: ast.AST, where: str) -> Iterator[tuple[str, str, bool]]:
        for child in ast.iter_child_nodes(node):
            inner = where
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                inner = child.name
            if isinstance(child, ast.Call) and (found := finder(child)) is not None:
                yield where, found[0], found[1]
            yield from visit(child, inner)

    yield from visit(tree, "<module>")


def walk(finder: Finder, skip: str, src: Path = SRC) -> tuple[int, list[str], list[str]]:
    """(modules walked, ``module:function:call`` of each call ``finder`` names outside the
    module or package ``skip``, those of them that only write)."""
    found: list[str] = []
    writes: list[str] = []
    modules = 0
    for path in sorted(src.rglob("*.py")):
        modules += 1
        module = path.relative_to(src).as_posix()
        if module == skip or module.startswith(skip.rstrip("/") + "/"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for where, name, writing in _calls(tree, finder):
            (writes if writing else found).append(f"{module}:{where}:{name}")
    return modules, found, writes
