"""Throwaway: one ruff error and one mypy error, to show .ci/lint fails (reverted next commit)."""

from __future__ import annotations

import os


def answer() -> int:
    return "forty-two"
