"""This cuship: its version, and where it is imported from. Any module may ask, without importing
the package root, whose public names load the check and bench capabilities on first use."""

from __future__ import annotations

from pathlib import Path

__all__ = ["IMPORT_ROOT", "PACKAGE", "__version__"]

__version__ = "0.1.0"

PACKAGE = Path(__file__).resolve().parent  # the cuship package directory
IMPORT_ROOT = (
    PACKAGE.parent
)  # the sys.path entry this cuship is imported from (src/, site-packages)
