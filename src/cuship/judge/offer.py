"""What a machine offers a wheel: its GPUs, the driver and the CUDA it runs, the installed torch
(version, C++ ABI and build flavour, read from its files), the NVIDIA libraries present, glibc."""

from __future__ import annotations

from typing import Any

from cuship._record import frozen
from cuship.machine import CudaLibraries, Fingerprint
from cuship.machine.loader import LoaderView

__all__ = ["Offer", "TorchBuild", "offer_of"]


@frozen
class TorchBuild:
    """The installed torch: ``flavour`` is ``cpu``, ``cuda``, ``rocm``, ``xpu`` or None when it
    could not be read (then no check that needs it is said to pass)."""

    version: str
    flavour: str | None = None
    cuda: str | None = None  # "13.0" for a CUDA build
    cxx11abi: bool | None = None
    flavour_from: str | None = None
    location: str | None = None  # its package directory when installed here (files readable)

    @property
    def cuda_major(self) -> int | None:
        if self.flavour != "cuda" or not self.cuda:
            return None
        head = self.cuda.split(".", 1)[0]
        return int(head) if head.isdigit() else None

    @property
    def described(self) -> str:
        """``torch 2.13.0 (CUDA 13.0)``, ``torch 2.13.0+cpu (CPU)``."""
        build = {"cpu": "CPU", "rocm": "ROCm", "xpu": "XPU"}.get(self.flavour or "", "")
        if self.flavour == "cuda":
            build = f"CUDA {self.cuda}" if self.cuda else "CUDA"
        return f"torch {self.version}" + (f" ({build})" if build else " (build unknown)")

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "flavour": self.flavour,
            "cuda": self.cuda,
            "cxx11abi": self.cxx11abi,
            "flavour_from": self.flavour_from,
        }


@frozen
class Offer:
    """The machine as the judge sees it. ``libraries`` None: they were not looked for (the
    library checks are then said not to have run)."""

    gpus: tuple[tuple[str, str | None], ...] = ()  # (name, compute capability)
    driver_version: str | None = None
    driver_cuda: str | None = None
    torch: TorchBuild | None = None
    libraries: CudaLibraries | None = None
    glibc: str | None = None
    gpu_source: str = "unknown"
    loader: LoaderView | None = None  # how its ld.so finds libraries; None: not described

    @property
    def has_driver(self) -> bool:
        """Whether an NVIDIA driver (libcuda) is here: a GPU or a driver version is known."""
        return bool(self.gpus) or self.driver_version is not None or self.driver_cuda is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "gpus": [{"name": name, "cc": cc} for name, cc in self.gpus],
            "gpu_source": self.gpu_source,
            "driver_version": self.driver_version,
            "driver_cuda": self.driver_cuda,
            "torch": None if self.torch is None else self.torch.to_json(),
            "libraries": None if self.libraries is None else self.libraries.to_json(),
            "glibc": self.glibc,
            "loader": None if self.loader is None else self.loader.to_json(),
        }


def offer_of(fp: Fingerprint) -> Offer:
    """The offer of a machine's fingerprint."""
    torch = None
    if fp.torch is not None:
        torch = TorchBuild(
            version=fp.torch.version,
            flavour=fp.torch.flavour,
            cuda=fp.torch.cuda,
            cxx11abi=fp.torch.cxx11abi,
            flavour_from=fp.torch.flavour_from,
            location=fp.torch.location,
        )
    return Offer(
        gpus=tuple((gpu.name, gpu.cc) for gpu in fp.gpus),
        driver_version=fp.driver_version,
        driver_cuda=fp.driver_cuda,
        torch=torch,
        libraries=fp.cuda_libs,
        glibc=fp.glibc,
        gpu_source=fp.gpu_source,
        loader=fp.loader,
    )
