"""cuship: take a CUDA Python package from source to a ``pip install`` that just works.

The public API is re-exported here; everything else is an implementation detail.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
