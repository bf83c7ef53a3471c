"""The package's shape: no import cycle among cuship's modules (lazy and type-checking imports
included), no private module at the top of ``src/cuship`` that only one package uses, no folder
of more than :data:`MAX_MODULES` modules, no package importing another package's private module,
and a layout page of the docs (docs/layout.md) that names every top-level module and package."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import cuship

SRC = Path(cuship.__file__).resolve().parent
LAYOUT = SRC.parents[1] / "docs" / "layout.md"

MAX_MODULES = 15  # per folder, ``__init__.py`` not counted: more, and the folder hides its stages
ONE_MODULE_PER_COMMAND = frozenset({"cuship.cli"})  # grows with the commands, by design


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


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def crowded_folders(src: Path, limit: int = MAX_MODULES) -> dict[str, int]:
    """Each package of ``src`` (named ``cuship.…``) with more than ``limit`` modules of its own."""
    counts = {}
    for folder in [src, *(p.parent for p in src.rglob("__init__.py"))]:
        modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        package = ".".join(folder.relative_to(src.parent).parts)
        if len(modules) > limit:
            counts[package] = len(modules)
    return counts


def private_owner(module: str) -> str | None:
    """The package a private module belongs to (``cuship.a`` for ``cuship.a._x.y``), else None."""
    parts = module.split(".")
    for i, part in enumerate(parts[1:], start=1):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def private_imports(graph: Mapping[str, set[str]]) -> list[tuple[str, str]]:
    """(importer, imported): a private module imported from outside the package that owns it."""
    found = []
    for user, targets in graph.items():
        for target in targets:
            owner = private_owner(target)
            if owner is not None and not _within(user, owner):
                found.append((user, target))
    return sorted(found)


def test_the_folder_rules_find_planted_breaks(tmp_path: Path) -> None:
    pkg = tmp_path / "cuship" / "big"
    pkg.mkdir(parents=True)
    for name in ["__init__", *(f"m{i}" for i in range(4))]:
        (pkg / f"{name}.py").write_text("", encoding="utf-8")
    assert crowded_folders(tmp_path / "cuship", limit=4) == {}
    (pkg / "m4.py").write_text("", encoding="utf-8")
    assert crowded_folders(tmp_path / "cuship", limit=4) == {"cuship.big": 5}
    graph = {
        "cuship.a.x": {"cuship.a._y", "cuship.b.c._z"},
        "cuship.a._y": {"cuship.a.b._w"},
        "cuship.b.c.d": {"cuship.b.c._z"},
        "cuship.b.c._z": set(),
        "cuship.a.b._w": set(),
    }
    assert private_imports(graph) == [
        ("cuship.a._y", "cuship.a.b._w"),
        ("cuship.a.x", "cuship.b.c._z"),
    ]


def test_no_folder_holds_more_than_fifteen_modules() -> None:
    crowded = {
        package: count
        for package, count in crowded_folders(SRC).items()
        if package not in ONE_MODULE_PER_COMMAND
    }
    assert crowded == {}, f"split these into sub-packages, one per stage: {crowded}"


def test_no_package_imports_another_packages_private_module() -> None:
    graph = import_graph()
    found = private_imports(graph)
    assert found == [], "make the module public where it belongs, or move the importer in"


def test_the_layout_page_names_every_top_level_module_and_package() -> None:
    text = LAYOUT.read_text(encoding="utf-8")
    for path in sorted(SRC.iterdir()):
        name = path.name
        if name.startswith("__") or name == "py.typed" or name.endswith(".egg-info"):
            continue
        shown = f"`{name}/`" if path.is_dir() else f"`{name}`"
        assert shown in text, f"docs/layout.md does not mention {shown}"
