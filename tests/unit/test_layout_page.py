"""docs/layout.md is held to the tree: it names every package and module of ``src/cuship``, and
nothing that is gone.

The rules, read off the "where | what" table (one row per top-level package or module, its
first cell naming them, its second describing what is inside):

- a top-level module or package is named anywhere on the page (``test_layout.py`` holds that);
- every other package (a folder with an ``__init__.py``) and public module (``x.py``) is named in
  the row of its top-level package, by its name (`` `scan.py` ``, `` `read/` ``) or by a path
  ending in it (`` `resolve/target.py` ``);
- not required: ``__init__.py`` (its folder names the package), private modules and packages
  (``_x.py``, ``_x/``: details of the package that holds them, named where it helps), and the
  command modules of ``cli/`` (one module per command, named after it; the CLI reference lists
  the commands);
- every module or package the table names (a `` `…py` `` or `` `…/` `` word) exists in the
  packages of its row, or is a top-level one (`` `docs/` ``), or a path from the repository's
  root (`` `docs/hooks.py` ``); and every package or module a row is for exists.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from tests.unit.test_layout import LAYOUT, SRC

Row = tuple[tuple[str, ...], tuple[str, ...]]  # (what the row is for, the names it uses)
_TICKED = re.compile(r"`([^`\s]+)`")


def table(text: str) -> list[Row]:
    """The rows of the page's "where | what" table."""
    rows: list[Row] = []
    inside = False
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) != 2:
            inside = False
            continue
        if cells == ["where", "what"]:
            inside = True
        elif inside and set(cells[0]) - set("-"):
            rows.append((tuple(_TICKED.findall(cells[0])), tuple(_TICKED.findall(cells[1]))))
    return rows


def _is_module_name(word: str) -> bool:
    return word.endswith((".py", "/"))


def _shown(path: Path) -> str:
    return path.name + "/" if path.is_dir() else path.name


def _units(src: Path) -> Iterator[Path]:
    """Every package and module below the top level that the page must name."""
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if len(rel.parts) < 2 or "__pycache__" in rel.parts:
            continue
        if path.is_dir() and not (path / "__init__.py").is_file():
            continue
        if path.is_file() and (path.suffix != ".py" or path.name == "__init__.py"):
            continue
        if path.name.startswith("_") or (rel.parts[0] == "cli" and path.is_file()):
            continue
        yield path


def _row_paths(heads: tuple[str, ...], src: Path) -> list[Path]:
    """What a row may name: everything under the packages and modules it is for."""
    found: list[Path] = []
    for head in heads:
        top = src / head.removesuffix("/")
        found += [top, *top.rglob("*")] if top.is_dir() else [top]
    return [p for p in found if "__pycache__" not in p.parts]


def unnamed(text: str, src: Path) -> list[str]:
    """Each package or module the page should name and does not."""
    rows = table(text)
    missing = []
    for path in _units(src):
        top = path.relative_to(src).parts[0]
        row = next((r for r in rows if top + "/" in r[0] or top in r[0]), None)
        name = _shown(path)
        if row is None or not any(w == name or w.endswith("/" + name) for w in row[1]):
            missing.append(str(path.relative_to(src)) + ("/" if path.is_dir() else ""))
    return missing


def gone(text: str, src: Path) -> list[str]:
    """Each package or module the page's table names that its row's packages do not hold."""
    stale = []
    for heads, words in table(text):
        for head in heads:
            if _is_module_name(head) and not (src / head.removesuffix("/")).exists():
                stale.append(head)
        paths = [
            p.relative_to(src).as_posix() + ("/" if p.is_dir() else "")
            for p in _row_paths(heads, src)
        ]
        for word in filter(_is_module_name, words):
            elsewhere = (src / word).exists() or (src.parents[1] / word).exists()
            if not elsewhere and not any(p == word or p.endswith("/" + word) for p in paths):
                stale.append(f"{word} (in the row of {', '.join(heads)})")
    return stale


def test_the_layout_page_names_every_package_and_module() -> None:
    found = unnamed(LAYOUT.read_text(encoding="utf-8"), SRC)
    assert found == [], "say in docs/layout.md what each holds (in its package's row)"


def test_the_layout_page_names_nothing_that_is_gone() -> None:
    found = gone(LAYOUT.read_text(encoding="utf-8"), SRC)
    assert found == [], "docs/layout.md names these, which are not there: fix the page"


def test_the_rules_find_a_planted_missing_and_a_planted_stale_name(tmp_path: Path) -> None:
    src = tmp_path / "cuship"
    for rel in ("a/__init__.py", "a/one.py", "a/_hidden.py", "a/sub/__init__.py", "a/sub/two.py"):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text("", encoding="utf-8")
    (src / "cli").mkdir()
    (src / "cli" / "build.py").write_text("", encoding="utf-8")
    (src / "a" / "templates").mkdir()
    page = (
        "| where | what |\n|---|---|\n"
        "| `a/` | `one.py` and `sub/` (`gone.py`, `templates/`), `b/old.py` |\n"
        "| `cli/`, `nothere.py` | one module per command |\n"
    )
    assert unnamed(page, src) == ["a/sub/two.py"]
    assert gone(page, src) == [
        "gone.py (in the row of a/)",
        "b/old.py (in the row of a/)",
        "nothere.py",
    ]
    fixed = page.replace("`gone.py`", "`two.py`").replace(", `b/old.py`", "")
    assert unnamed(fixed, src) == []
    assert gone(fixed.replace(", `nothere.py`", ""), src) == []
