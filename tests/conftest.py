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
