"""Importing optional kernel modules: a test module whose kernels cannot import here is skipped
with the real error, instead of failing the collection of the whole run."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType

import pytest


def import_or_skip(name: str) -> ModuleType:
    """``name`` imported, or the calling test module skipped with why it could not be.

    Broader than ``pytest.importorskip``: numba-cuda fails on NumPy releases it predates with
    AttributeError (``np.row_stack`` removed in NumPy 2.5), not only ImportError.
    """
    try:
        return importlib.import_module(name)
    except Exception as err:  # whatever the import raised is the reason, verbatim
        reason = f"{name} cannot be imported here: {type(err).__name__}: {err}"
        pytest.skip(reason, allow_module_level=True)


def first_kernel_or_skip(what: str, launch: Callable[[], object]) -> None:
    """Run one tiny kernel, or skip the calling test module with why it failed.

    An engine can import and still fail at its first compile: numba-cuda 0.30 under NumPy 2.5
    (seen on an H100) raises ``AttributeError: module 'numpy' has no attribute 'row_stack'``
    only when it compiles a kernel. Every test of the module would fail the same way.
    """
    try:
        launch()
    except Exception as err:  # the first compile's error, verbatim, is the reason
        reason = f"{what} cannot compile a kernel here: {type(err).__name__}: {err}"
        pytest.skip(reason, allow_module_level=True)
