"""Importing optional kernel modules: a test module whose kernels cannot import here is skipped
with the real error, instead of failing the collection of the whole run."""

from __future__ import annotations

import importlib
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
