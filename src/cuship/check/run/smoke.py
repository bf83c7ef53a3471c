"""One trivial kernel per engine, launched once in a worker after the engine's imports.

Importing an engine's modules is not enough to know it works: numba-cuda 0.30 imports under
NumPy 2.5 and fails only when its first kernel is compiled (``np.row_stack`` is gone), which
would turn into one identical error per case. A one-element kernel compiled and launched on the
engine's device (a GPU, the Triton interpreter, the Numba simulator) finds that once, and the
engine is reported unavailable with the error, like an import that fails.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

from cuship.check.case.engines import ENGINES, Engine
from cuship.provenance import one_line

__all__ = ["launch_problem"]


def _numba(engine: Engine) -> None:
    import numpy as np
    from numba import cuda

    @cuda.jit
    def one(out):  # type: ignore[no-untyped-def]
        out[0] = 1.0

    out = np.zeros(1, dtype=np.float32)
    one[1, 1](out)
    if out[0] != 1.0:
        raise RuntimeError(f"a one-element Numba kernel wrote {out[0]!r}, not 1.0")


def _triton(engine: Engine) -> None:
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def one(out):  # type: ignore[no-untyped-def]
        tl.store(out, 1.0)

    out = torch.zeros(1, dtype=torch.float32, device="cpu" if engine.device == "cpu" else "cuda")
    one[(1,)](out)
    if float(out[0]) != 1.0:
        raise RuntimeError(f"a one-element Triton kernel wrote {float(out[0])!r}, not 1.0")


_SMOKE: Mapping[str, tuple[str, Callable[[Engine], None]]] = {
    "numba": ("numba", _numba),
    "triton": ("triton", _triton),
}


def launch_problem(engine_name: str) -> dict[str, Any] | None:
    """Compile and launch the engine's one-element kernel (worker side, after its imports);
    the failure in :func:`cuship.check.run.availability.import_problem`'s shape, or None."""
    engine = ENGINES[engine_name]
    smoke = _SMOKE.get(engine.kind)
    if smoke is None:
        return None
    module, run = smoke
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a one-thread grid is slow by design; say nothing
            run(engine)
    except Exception as err:  # any failure here would fail every case the same way
        return {"module": module, "missing": None, "error": one_line(err), "stage": "launch"}
    return None
