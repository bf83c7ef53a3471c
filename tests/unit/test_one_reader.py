"""Everything cuship reads from outside goes through :mod:`cuship._read` (issue 43: one reader):
no other module of ``src/cuship`` opens a file, reads one whole, or parses JSON, TOML or YAML,
save the calls :data:`ALLOWED` names with the reason each is not input (a write, cuship's own
file, a descriptor the reader opened, a member of an archive the wheel readers bound)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import cuship

SRC = Path(cuship.__file__).parent
READER = SRC / "_read.py"

# call name -> what it does, for the message
_METHODS = {
    "read_text": "reads a file whole",
    "read_bytes": "reads a file whole",
    "open": "opens a file",
    "fdopen": "opens a descriptor",
    "mmap": "maps a file",
    "connect": "opens a database",
    "ZipFile": "opens an archive",
}
_PARSERS = {
    ("json", "load"),
    ("json", "loads"),
    ("tomllib", "load"),
    ("tomllib", "loads"),
    ("yaml", "safe_load"),
    ("yaml", "load"),
    ("pickle", "load"),
    ("pickle", "loads"),
    ("marshal", "loads"),
}

# "module:function:call" -> why it is not input read past the reader. ``function`` is the
# innermost enclosing function ("<module>" at the top level).
ALLOWED: dict[str, str] = {}


def _calls(tree: ast.AST) -> Iterator[tuple[str, str, int]]:
    """(enclosing function, call name, line) of every read-like call in ``tree``."""

    def visit(node: ast.AST, where: str) -> Iterator[tuple[str, str, int]]:
        for child in ast.iter_child_nodes(node):
            inner = where
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                inner = child.name
            if isinstance(child, ast.Call):
                name = _read_call(child)
                if name is not None:
                    yield where, name, child.lineno
            yield from visit(child, inner)

    yield from visit(tree, "<module>")


def _read_call(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id if func.id in ("open", "ZipFile", "mmap") else None
    if not isinstance(func, ast.Attribute):
        return None
    owner = func.value.id if isinstance(func.value, ast.Name) else None
    if owner is not None and (owner, func.attr) in _PARSERS:
        return f"{owner}.{func.attr}"
    if func.attr == "connect" and owner != "sqlite3":
        return None
    if func.attr in ("read", "open") and owner == "os":
        return f"os.{func.attr}"
    if func.attr in _METHODS:
        return f"{owner}.{func.attr}" if owner in ("os", "io", "mmap", "zipfile") else func.attr
    return None


def walk(src: Path = SRC) -> tuple[int, list[str]]:
    """(modules walked, ``module:function:call`` of every read-like call outside the reader)."""
    found = []
    modules = 0
    for path in sorted(src.rglob("*.py")):
        modules += 1
        if path == READER:
            continue
        module = str(path.relative_to(src))
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        found += [f"{module}:{where}:{name}" for where, name, _ in _calls(tree)]
    return modules, found


def test_the_walk_finds_a_planted_read(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "import json\nfrom pathlib import Path\n"
        "def f(p):\n    return json.loads(Path(p).read_text())\n"
        "def g(p):\n    with open(p) as h:\n        return h.read()\n",
        encoding="utf-8",
    )
    modules, found = walk(tmp_path)
    assert modules == 1
    assert found == ["m.py:f:json.loads", "m.py:f:read_text", "m.py:g:open"]


def test_no_module_reads_input_past_the_reader() -> None:
    modules, found = walk()
    assert modules > 250  # the whole package was walked
    unexplained = sorted(set(found) - set(ALLOWED))
    assert unexplained == [], "read it through cuship._read, or allow-list it with the reason"
    stale = sorted(set(ALLOWED) - set(found))
    assert stale == [], "these allow-listed reads are gone: drop them from ALLOWED"
