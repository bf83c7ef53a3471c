"""cuvecops' own tests.

Without a GPU, Triton kernels run in the Triton interpreter and Numba kernels in the Numba CUDA
simulator; both switches must be set before triton or numba is imported, so they are set here
unless the caller chose otherwise (``TRITON_INTERPRET=0 NUMBA_ENABLE_CUDASIM=0`` on a GPU machine).
Tests marked ``gpu`` call the compiled extension and need a CUDA device.
"""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import numpy as np
import pytest


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20260101)


@pytest.fixture(scope="session")
def torch_device() -> str:
    """Where Triton tensors live: the CPU under the interpreter, else the GPU."""
    return "cpu" if os.environ.get("TRITON_INTERPRET") == "1" else "cuda"
