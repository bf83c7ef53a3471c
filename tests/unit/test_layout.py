"""The package's shape: no import cycle among cuship's modules (lazy and type-checking imports
included), no private module at the top of ``src/cuship`` that only one package uses, and a
layout page of the docs (docs/layout.md) that names every top-level module and package."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import cuship

SRC = Path(cuship.__file__).resolve().parent
LAYOUT = SRC.parents[1] / "docs" / "layout.md"


def _modules() -> dict[str, Path]:
    found = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _owner(name: str, modules: Mapping[str, Path]) -> str | None:
    """The module ``name`` refers to: itself, else its nearest enclosing package or module."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path, modules: Mapping[str, Path]) -> Iterator[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            targets = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            owner = _owner(target, modules) if target.startswith("cuship") else None
            if owner is not None and owner != module:
                yield owner


def import_graph() -> dict[str, set[str]]:
    """Every cuship module and the cuship modules it imports anywhere in its source."""
    modules = _modules()
    return {name: set(_imports(name, path, modules)) for name, path in modules.items()}


def _reachable(graph: Mapping[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(graph[start])
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(graph[node])
    return seen


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or through others."""
    reach = {node: _reachable(graph, node) for node in graph}
    groups = {
        tuple(sorted({node} | {o for o in reach[node] if node in reach[o]}))
        for node in graph
        if node in reach[node]
    }
    return sorted(list(group) for group in groups)


def test_the_cycle_finder_finds_a_planted_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_cuships_modules() -> None:
    graph = import_graph()
    assert len(graph) > 100  # the walk saw the whole package
    assert cycles(graph) == []


def test_no_top_level_private_module_serves_one_package_only() -> None:
    graph = import_graph()
    private = [m for m in graph if m.count(".") == 1 and m.split(".")[1].startswith("_")]
    private = [m for m in private if m not in ("cuship.__main__", "cuship.__init__")]
    for module in private:
        users = {
            ".".join(user.split(".")[:2]) for user, targets in graph.items() if module in targets
        }
        assert len(users) >= 2, f"{module} is used only by {sorted(users)}: move it there"


def test_the_layout_page_names_every_top_level_module_and_package() -> None:
    text = LAYOUT.read_text(encoding="utf-8")
    for path in sorted(SRC.iterdir()):
        name = path.name
        if name.startswith("__") or name == "py.typed" or name.endswith(".egg-info"):
            continue
        shown = f"`{name}/`" if path.is_dir() else f"`{name}`"
        assert shown in text, f"docs/layout.md does not mention {shown}"
