"""Slowdowns planted on purpose, for the test that shows the instruction-count gate catches one.

``instr_gate.py --plant NAME`` (a hidden option the tests use) runs each counted command with
:func:`install` called first; cuship itself knows nothing of this module.

* ``none``: nothing is patched (the launcher alone: it must stay within the margin);
* ``extra-pass``: before an index update, one more pass over the site's wheels, each stated
  and its PEP 658 metadata read: the kind of regression that makes +1 wheel grow with the
  size of the index.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["install"]


def _extra_pass(site: str) -> int:
    """Each wheel in ``site``'s files/ stated, and its metadata file read."""
    files = f"{site}/files"
    total = 0
    for name in sorted(os.listdir(files)):  # noqa: PTH208
        if name.endswith(".whl"):
            total += os.stat(f"{files}/{name}").st_size  # noqa: PTH116
            with open(f"{files}/{name}.metadata", "rb") as handle:
                total += len(handle.read())
    return total


def install(name: str) -> None:
    """Plant the slowdown ``name`` (see the module's docstring)."""
    if name == "none":
        return
    if name != "extra-pass":
        raise SystemExit(f"unknown plant {name!r}")
    import cuship.index.update as module

    original = module.update

    def update(given: Any, out: Any, *args: Any, **kwargs: Any) -> Any:
        _extra_pass(str(out))
        return original(given, out, *args, **kwargs)

    module.update = update
