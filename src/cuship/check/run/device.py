"""Which device a ``cuship check`` runs on when it was asked for ``auto`` (the default)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cuship.check.case.engines import ENGINES, Device

__all__ = ["choose_device"]


def choose_device(
    asked: str,
    environ: Mapping[str, str],
    *,
    engines: Sequence[str] = (),
    force_ptx: bool = False,
    sanitize: bool = False,
) -> Device:
    """``asked`` ("cpu" or "cuda") as it is; for "auto": cuda for ``--force-ptx`` and
    ``--sanitize`` (GPU runs: without a GPU they say so, exit 3), cpu when every engine named
    is an interpreter or simulator (a CPU run, GPU or not), else cuda when this machine has a
    GPU (``environ``'s ``CUSHIP_GPUS`` overrides what is found) and cpu when it has none."""
    if asked in ("cpu", "cuda"):
        return "cpu" if asked == "cpu" else "cuda"
    if force_ptx or sanitize:
        return "cuda"
    if engines and all(name in ENGINES and ENGINES[name].device == "cpu" for name in engines):
        return "cpu"
    from cuship.machine import fingerprint

    return "cuda" if fingerprint(environ, toolkit=False).gpus else "cpu"
