"""cuship: take a CUDA Python package from source to a ``pip install`` that just works.

The public API is what a project's own code needs, named in ``__all__``:

* check modules (``[check] modules``): :class:`Op`, :class:`Impl`, :class:`Tensor`,
  :class:`Scalar`, :class:`Invariant`, :func:`edge_sizes`;
* benchmark modules (``[bench] modules``): :func:`case`, :class:`Case`, :func:`case_key`;
* scripts driving cuship: :class:`CushipError` (every error cuship raises on purpose; its
  ``exit_code`` is the command's), :func:`load_config`, :func:`fingerprint`.

The PEP 517 backend is the module ``cuship.backend``; the pytest plugin ``cuship.pytest_plugin``
registers itself. Everything else is an implementation detail that may change between releases.
Names load on first use, so ``import cuship`` stays cheap (the CLI imports it at start-up).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from cuship.version import __version__

_PUBLIC = {
    "Impl": "cuship.check",
    "Invariant": "cuship.check",
    "Op": "cuship.check",
    "Scalar": "cuship.check",
    "Tensor": "cuship.check",
    "edge_sizes": "cuship.check",
    "Case": "cuship.bench",
    "case": "cuship.bench",
    "case_key": "cuship.bench",
    "CushipError": "cuship.errors",
    "load_config": "cuship.config",
    "fingerprint": "cuship.machine",
}

__all__ = [
    "Case",
    "CushipError",
    "Impl",
    "Invariant",
    "Op",
    "Scalar",
    "Tensor",
    "__version__",
    "case",
    "case_key",
    "edge_sizes",
    "fingerprint",
    "load_config",
]

if TYPE_CHECKING:
    from cuship.bench import Case, case, case_key
    from cuship.check import Impl, Invariant, Op, Scalar, Tensor, edge_sizes
    from cuship.config import load_config
    from cuship.errors import CushipError
    from cuship.machine import fingerprint


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'cuship' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})
