"""cushiptorchops' own tests.

Tests marked ``gpu`` need a CUDA device and a CUDA build of torch. cuship's pytest plugin gates
them; without it they are skipped here when torch sees no CUDA device. The report header says
which library (variant) and which torch the run uses.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch


def _gpu_reason() -> str | None:
    """None when the CUDA tests can run, else why not."""
    if torch.version.cuda is None:
        return f"torch {torch.__version__} is a CPU-only build"
    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    return None


def pytest_report_header(config: pytest.Config) -> str:
    import cushiptorchops

    reason = _gpu_reason()
    gpu = "CUDA tests run" if reason is None else f"CUDA tests skipped ({reason})"
    return (
        f"cushiptorchops: {cushiptorchops.variant()} library {cushiptorchops.library_path()}; "
        f"torch {torch.__version__}; {gpu}"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = _gpu_reason()
    if reason is None or config.pluginmanager.has_plugin("cuship"):
        return
    skip = pytest.mark.skip(reason=f"needs a CUDA GPU ({reason})")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20260101)
