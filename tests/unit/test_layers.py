"""The layers of shared/DESIGN.md, read off the code: command line → pipeline → capabilities →
vocabulary → ground. A module imports its own layer or a lower one: an import that runs up a
layer fails here, whether it runs when the module is imported or inside a function (a lazy
import only hides the dependency), and so does any cycle among the packages. Imports under
``if TYPE_CHECKING`` are types for the checker, not dependencies, and are left out."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

from tests.unit.test_layout import LAYOUT, _modules, _owner, cycles

# Top to bottom: each unit is a top-level module or package of src/cuship. "" is the package
# root: the public API, whose names load check and bench on first use, so it stands on top and
# no module of the package imports it (the version is cuship.version's).
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("command line", frozenset({"", "__main__", "cli", "docs"})),
    ("pipeline", frozenset({"ship"})),
    (
        "capabilities",
        frozenset(
            {
                "attest",
                "backend",
                "bench",
                "builder",
                "check",
                "ci",
                "doctor",
                "gpurun",
                "index",
                "judge",
                "resolve",
                "serve",
                "toolkit",
            }
        ),
    ),
    (
        "vocabulary",
        frozenset(
            {
                "arch",
                "compat",
                "config",
                "machine",
                "matrix",
                "project",
                "provenance",
                "pytest_plugin",
                "schema",
                "store",
                "wheel",
            }
        ),
    ),
    (
        "ground",
        frozenset(
            {
                "_format",
                "_fs",
                "_names",
                "_read",
                "_record",
                "errors",
                "events",
                "process",
                "settings",
                "tools",
                "version",
            }
        ),
    ),
)


def unit(module: str) -> str:
    """The top-level unit of a cuship module (``cuship.judge.gpu`` → ``judge``; the root → "")."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer_of(name: str, layers: tuple[tuple[str, frozenset[str]], ...] = LAYERS) -> int:
    """The layer index of unit ``name``, 0 at the top."""
    for index, (_, units) in enumerate(layers):
        if name in units:
            return index
    raise AssertionError(f"{name!r} is in no layer: add it to LAYERS in {__file__}")


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _targets(node: ast.Import | ast.ImportFrom, package: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        parts = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join([*parts, base] if base else parts)
    return [f"{base}.{alias.name}" for alias in node.names]


def _walk(body: list[ast.stmt], eager: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import under ``body`` and whether it runs when the module is imported (module-level
    or in a class body, outside ``if TYPE_CHECKING``); a function's body runs later."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, eager
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _walk(node.orelse, eager)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield from _walk(node.body, False)
        else:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    yield from _walk([child], eager)
                elif isinstance(child, ast.ExceptHandler):
                    yield from _walk(child.body, eager)


def imports_of(module: str, path: Path, modules: Mapping[str, Path]) -> Iterator[tuple[str, bool]]:
    """(imported cuship module, eager) for each import in ``module``'s source."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node, eager in _walk(tree.body, True):
        for target in _targets(node, package):
            owner = _owner(target, modules) if target.startswith("cuship") else None
            if owner is not None and owner != module:
                yield owner, eager


def upward(
    edges: Mapping[str, set[tuple[str, bool]]],
    layers: tuple[tuple[str, frozenset[str]], ...] = LAYERS,
) -> tuple[list[str], list[str]]:
    """(eager, lazy) imports that run up a layer, each as ``importer -> imported``."""
    eager: list[str] = []
    lazy: list[str] = []
    for user, targets in sorted(edges.items()):
        for target, is_eager in sorted(targets):
            if layer_of(unit(target), layers) < layer_of(unit(user), layers):
                (eager if is_eager else lazy).append(f"{user} -> {target}")
    return eager, lazy


def package_graph(edges: Mapping[str, set[tuple[str, bool]]]) -> dict[str, set[str]]:
    """The units and the units each imports (eagerly or not)."""
    graph: dict[str, set[str]] = {unit(m): set() for m in edges}
    for user, targets in edges.items():
        for target, _ in targets:
            if unit(target) != unit(user):
                graph[unit(user)].add(unit(target))
    return graph


def edges_of_source() -> dict[str, set[tuple[str, bool]]]:
    modules = _modules()
    return {name: set(imports_of(name, path, modules)) for name, path in modules.items()}


def test_every_unit_of_the_package_has_a_layer() -> None:
    units = {unit(m) for m in _modules()}
    assert len(units) > 30  # the walk saw the whole package
    for name in units:
        layer_of(name)
    listed = set().union(*(u for _, u in LAYERS))
    assert listed <= units, f"LAYERS names what is gone: {sorted(listed - units)}"


def test_no_module_imports_a_higher_layer() -> None:
    eager, lazy = upward(edges_of_source())
    assert eager == [], "move the code to the layer that uses it (or its data below both)"
    assert lazy == [], "an import inside a function is still a dependency: move the code"


def test_the_packages_import_each_other_in_no_cycle() -> None:
    assert cycles(package_graph(edges_of_source())) == []


def test_planted_breaches_fail_the_layer_and_cycle_rules(tmp_path: Path) -> None:
    """A lower module importing a higher one is a breach, at module level or inside a function
    (told apart in the message); two packages importing each other are a cycle; an import under
    ``if TYPE_CHECKING`` is neither."""
    layers = (("top", frozenset({"high"})), ("bottom", frozenset({"low", "other"})))
    src = tmp_path / "cuship"
    (src / "low").mkdir(parents=True)
    (src / "high").mkdir()
    (src / "other").mkdir()
    for folder in ("low", "high", "other"):
        (src / folder / "__init__.py").write_text("", encoding="utf-8")
    (src / "low" / "a.py").write_text(
        "from cuship.high import b\nfrom cuship.other import c\n"
        "def f():\n    from cuship.high import lazy\n",
        encoding="utf-8",
    )
    (src / "high" / "b.py").write_text("from cuship.low import a\n", encoding="utf-8")
    (src / "high" / "lazy.py").write_text("", encoding="utf-8")
    (src / "other" / "c.py").write_text(
        "if TYPE_CHECKING:\n    from cuship.high import b\nfrom cuship.low import a\n",
        encoding="utf-8",
    )
    modules = {
        ".".join(p.relative_to(tmp_path).with_suffix("").parts).removesuffix(".__init__"): p
        for p in src.rglob("*.py")
    }
    edges = {name: set(imports_of(name, path, modules)) for name, path in modules.items()}
    eager, lazy = upward(edges, layers)
    assert eager == ["cuship.low.a -> cuship.high.b"]
    assert lazy == ["cuship.low.a -> cuship.high.lazy"]
    assert cycles(package_graph(edges)) == [["high", "low", "other"]]


def test_the_layout_page_shows_the_same_layers() -> None:
    """docs/layout.md's layer table names each unit on the layer this test holds it to."""
    rows = {}
    for line in LAYOUT.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 2 and cells[0] in {name for name, _ in LAYERS}:
            rows[cells[0]] = {
                part.split("`")[0].removesuffix("/").removesuffix(".py")
                for part in cells[1].split("`")[1::2]
            }
    for name, units in LAYERS:
        assert rows.get(name) == set(units - {""}), f"docs/layout.md, layer {name!r}"
