"""Unit tests never spawn processes: an autouse fixture makes subprocess.Popen fail."""

from __future__ import annotations

import subprocess
from typing import Any, NoReturn

import pytest

from tests.index_stops import stop_after  # noqa: F401 - a fixture of the index update tests


class _NoSubprocess(subprocess.Popen):  # type: ignore[type-arg]
    def __init__(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise AssertionError(f"unit tests must not spawn processes: {args!r}")


@pytest.fixture(autouse=True)
def _no_subprocess(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subprocess, "Popen", _NoSubprocess)
