"""Worker side of a sanitized pass: synchronize the device, then write a marker into the stream
compute-sanitizer writes its report to (see :mod:`cuship.check.sanitize.map`).

Synchronizing first is what lets a marker follow the reports of the kernels before it: through
torch and Numba when the worker imported them, then ``cuCtxSynchronize`` on the current context
(the compiled extension's, through the CUDA runtime). Every error is ignored: after a memcheck
error the context is broken and every call fails, and the marker must still be written.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from typing import Any

from cuship.check.sanitize.map import marker

__all__ = ["Marks", "synchronize"]

_LIBCUDA: list[Any] = []


def _cu_ctx_synchronize() -> None:
    if not _LIBCUDA:
        try:
            _LIBCUDA.append(ctypes.CDLL("libcuda.so.1"))
        except OSError:
            _LIBCUDA.append(None)
    lib = _LIBCUDA[0]
    if lib is not None:
        with contextlib.suppress(Exception):
            lib.cuCtxSynchronize()


def synchronize() -> None:
    """Wait for the device work this process launched; never raises."""
    torch = sys.modules.get("torch")
    if torch is not None:
        with contextlib.suppress(Exception):
            if torch.cuda.is_initialized():
                torch.cuda.synchronize()
    numba_cuda = sys.modules.get("numba.cuda")
    if numba_cuda is not None:
        with contextlib.suppress(Exception):
            numba_cuda.synchronize()
    _cu_ctx_synchronize()


class Marks:
    """The stream at ``path`` (a FIFO the parent holds open), and this worker's name in it."""

    def __init__(self, path: str, worker: str) -> None:
        self.fd = os.open(path, os.O_WRONLY)
        self.worker = worker

    def write(self, event: str, *fields: str) -> None:
        """Synchronize, then write one marker (a single write: it cannot be split by others)."""
        synchronize()
        os.write(self.fd, marker(event, *fields).encode())
