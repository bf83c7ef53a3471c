"""cuship's pytest plugin (entry point ``pytest11``): GPU test gating by marker."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: the test needs a CUDA GPU (cuship gates it)")
