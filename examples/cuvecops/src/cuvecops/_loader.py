"""Finds out, once, whether the CUDA extension can run here, and says why not when it cannot.

Importing cuvecops never fails on a CPU-only machine: the extension is imported lazily, inside
``try``, and the reason it could not be used is kept for :func:`cuvecops.backend`.
"""

from __future__ import annotations

import ctypes
import importlib
import importlib.util
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar, cast, overload

BACKEND_ENV = "CUVECOPS_BACKEND"
CUDART_SONAME = "libcudart.so.13"
# Where the pip packages of the CUDA runtime put libcudart, under the ``nvidia`` namespace:
# nvidia-cuda-runtime (CUDA 13) and nvidia-cuda-runtime-cu12 style layouts.
_CUDART_SUBDIRS = ("cu13/lib", "cuda_runtime/lib")
_Out = TypeVar("_Out")
_MISSING_LIB = re.compile(r"^(?P<lib>\S+\.so[.\d]*): cannot open shared object file")


class CudaOps(Protocol):
    """What ``cuvecops._cuda`` provides (see ``_cuda.pyi``): host buffers typed ``object``, and
    the ``*_device`` entry points taking device addresses and a stream handle as ints."""

    def device_count(self) -> int: ...
    def probe(self) -> tuple[int, str]: ...
    @overload
    def saxpy(self, a: float, x: object, y: object, out: None = None) -> bytearray: ...
    @overload
    def saxpy(self, a: float, x: object, y: object, out: _Out) -> _Out: ...
    @overload
    def softmax_rows(self, x: object, rows: int, cols: int, out: None = None) -> bytearray: ...
    @overload
    def softmax_rows(self, x: object, rows: int, cols: int, out: _Out) -> _Out: ...
    def reduce_sum(self, x: object) -> float | int: ...
    def saxpy_device(
        self,
        a: float,
        x: int,
        y: int,
        out: int,
        n: int,
        stream: int = 0,
        wait: tuple[int, ...] = (),
    ) -> None: ...
    def softmax_rows_device(
        self, x: int, out: int, rows: int, cols: int, stream: int = 0, wait: tuple[int, ...] = ()
    ) -> None: ...
    def reduce_sum_device(
        self, dtype: str, x: int, n: int, out: int, stream: int = 0, wait: tuple[int, ...] = ()
    ) -> None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Backend:
    """Which implementation the public ops use, and why."""

    name: str  # "cuda" or "cpu"
    reason: str
    module: CudaOps | None = None
    cudart: str | None = None  # the libcudart preloaded from a pip package, if any

    def describe(self) -> str:
        return f"{self.name}: {self.reason}"


def find_pip_cudart() -> Path | None:
    """libcudart from an installed ``nvidia-cuda-runtime`` wheel, or None."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return None
    if spec is None or spec.submodule_search_locations is None:
        return None
    for root in spec.submodule_search_locations:
        for sub in _CUDART_SUBDIRS:
            candidate = Path(root) / sub / CUDART_SONAME
            if candidate.is_file():
                return candidate
    return None


def preload_cudart() -> str | None:
    """Load a pip-installed libcudart globally, so the extension finds it (best effort)."""
    path = find_pip_cudart()
    if path is None:
        return None
    try:
        ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
    except OSError:
        return None
    return str(path)


def import_reason(err: ImportError) -> str:
    """A short reason for an ImportError of the extension."""
    message = str(err)
    missing = _MISSING_LIB.match(message)
    if missing:
        return f"extension not importable: {missing.group('lib')} not found"
    return f"extension not importable: {message}"


def detect(
    environ: Mapping[str, str], *, importer: Callable[[str], object] = importlib.import_module
) -> Backend:
    """Decide the backend: ``CUVECOPS_BACKEND`` (auto, cpu, cuda), the extension, the devices.

    ``importer`` imports ``cuvecops._cuda``; tests pass a stand-in.
    """
    wanted = environ.get(BACKEND_ENV, "auto").strip().lower() or "auto"
    if wanted not in ("auto", "cpu", "cuda"):
        return Backend(name="cpu", reason=f"{BACKEND_ENV}={wanted!r} is not auto, cpu or cuda")
    if wanted == "cpu":
        return Backend(name="cpu", reason=f"forced by {BACKEND_ENV}=cpu")
    cudart = preload_cudart()
    try:
        module = cast(CudaOps, importer("cuvecops._cuda"))
    except ImportError as err:
        return Backend(name="cpu", reason=import_reason(err), cudart=cudart)
    count, error = module.probe()
    if count <= 0:
        why = f"cudaGetDeviceCount: {error}" if error else "cudaGetDeviceCount returned 0"
        return Backend(name="cpu", reason=f"no CUDA device ({why})", module=None, cudart=cudart)
    source = cudart or "the system loader"
    return Backend(
        name="cuda",
        reason=f"{count} CUDA device(s), libcudart from {source}",
        module=module,
        cudart=cudart,
    )
