"""cuvecops' own tests.

Triton and Numba kernels run on the GPU where one is usable, else in the Triton interpreter and
the Numba CUDA simulator (``gpu_mode.decide``: the NVIDIA driver is asked through ctypes, never
through torch, triton or numba). Both switches must be set before triton or numba is imported;
they are set in ``pytest_configure``, after cuship's plugin has given an xdist worker its
``CUDA_VISIBLE_DEVICES`` and before any test module is imported. A value the caller exported
wins (``TRITON_INTERPRET=1 NUMBA_ENABLE_CUDASIM=1`` forces the interpreters on a GPU machine).
The report header says which mode ran.

Tests marked ``gpu`` call the compiled extension and need a CUDA device; cuship's pytest plugin
gates them, and without it they are skipped here when the mode is CPU.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from gpu_mode import Mode, decide

MODE = pytest.StashKey[Mode]()


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    mode = decide(os.environ)
    os.environ.update(mode.flags)
    config.stash[MODE] = mode


def pytest_report_header(config: pytest.Config) -> str:
    return config.stash[MODE].header()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mode = config.stash[MODE]
    if mode.gpu or config.pluginmanager.has_plugin("cuship"):
        return
    skip = pytest.mark.skip(reason=f"needs a CUDA GPU ({mode.reason})")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20260101)


@pytest.fixture(scope="session")
def run_mode(pytestconfig: pytest.Config) -> Mode:
    return pytestconfig.stash[MODE]


@pytest.fixture(scope="session")
def torch_device(run_mode: Mode) -> str:
    """Where Triton tensors live: the CPU under the interpreter, else the GPU."""
    return run_mode.torch_device
