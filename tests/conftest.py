"""Shared fixtures: paths to the repository and the bundled example."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "cuvecops"


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture
def example_dir() -> Path:
    return EXAMPLE


@pytest.fixture(autouse=True)
def _terminal_size_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest-xdist workers export COLUMNS=80; tables are then judged at cuship's pipe width."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


@pytest.fixture(autouse=True)
def _not_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """CI machines export ``CI``/``GITHUB_ACTIONS``, which change cuship's defaults (engines
    required, no live progress); a test that wants CI behaviour says so in its own environment."""
    for name in ("CI", "GITHUB_ACTIONS"):
        monkeypatch.delenv(name, raising=False)
