"""The settings table is the one place a ``CUSHIP_*`` variable is spelled, and the docs show it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import cuship
from cuship import docs, settings
from cuship.docs import env

SRC = Path(cuship.__file__).resolve().parent
REPO = SRC.parents[1]
# What a user reads: the README and the docs site's hand-written pages.
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
NAME = re.compile(r"\bCUSHIP_[A-Z0-9_]*[A-Z0-9]\b")


def test_the_docs_site_shows_the_settings_table_as_it_is() -> None:
    assert docs.PAGES["reference/environment.md"] is env.render
    assert settings.render_markdown() in env.render()


def test_every_variable_is_listed_once_with_a_meaning() -> None:
    names = [s.name for s in settings.SETTINGS]
    assert len(names) == len(set(names)) >= 15
    assert all(s.meaning and s.name.startswith("CUSHIP_") for s in settings.SETTINGS)


def test_code_names_variables_by_their_constants_only() -> None:
    spelled = []
    for path in SRC.rglob("*.py"):
        if path == SRC / "settings.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
                continue
            if NAME.fullmatch(node.value):
                spelled.append(f"{path.relative_to(SRC)}:{node.lineno} {node.value}")
    assert spelled == []


def test_every_variable_mentioned_anywhere_is_in_the_table() -> None:
    known = {s.name for s in settings.SETTINGS}
    mentioned = set()
    for path in [*SRC.rglob("*.py"), *SRC.rglob("*.json"), *DOCS]:
        mentioned |= set(NAME.findall(path.read_text(encoding="utf-8")))
    assert mentioned - known == set()
