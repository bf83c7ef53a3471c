"""The compatibility tables' rows as frozen dataclasses: a CUDA toolkit, a torch release, a GPU model."""

from __future__ import annotations

from packaging.version import Version

from cuship._record import frozen
from cuship.arch import bare_sm
from cuship.schema import field_doc

__all__ = ["CudaToolkit", "GpuModel", "PtxIsa", "TorchRelease", "format_driver"]


def format_driver(version: Version) -> str:
    """A driver version as NVIDIA writes it: ``Version("570.124.6")`` → ``"570.124.06"``."""
    parts = version.release
    return ".".join([str(p) for p in parts[:2]] + [f"{p:02d}" for p in parts[2:]])


@frozen
class CudaToolkit:
    """One CUDA toolkit release (``12.8.1``): driver minimums and the SASS targets nvcc accepts."""

    version: Version = field_doc("The toolkit release, e.g. 12.8.1; rows ascend by version.")
    released: str = field_doc("Month of the release, YYYY-MM.")
    min_driver_linux: Version = field_doc(
        "The release notes' Toolkit Driver Version for Linux x86_64, e.g. 570.124.06."
    )
    family_min_driver_linux: Version = field_doc(
        "Minimum driver for minor-version compatibility within the major, e.g. 525.60.13."
    )
    sms: tuple[str, ...] = field_doc(
        'Real targets nvcc -arch=sm_XX accepts, with "a" and "f" variants: "90", "90a", "100f".',
        non_empty=True,
    )
    dropped: tuple[str, ...] = field_doc("Targets this release removed against the row before.")
    source: str = field_doc("https URL of the page the row comes from.")
    note: str = field_doc("Free text for people.", default="")

    @property
    def major_minor(self) -> str:
        """``"12.8"``."""
        return f"{self.version.major}.{self.version.minor}"

    @property
    def variant(self) -> str:
        """The PyTorch-style label of this toolkit's minor version: ``"cu128"``."""
        return f"cu{self.version.major}{self.version.minor}"

    def can_target(self, sm: str) -> bool:
        """True if this nvcc can emit SASS for ``sm`` (``"80"``, ``"90a"``, ``"sm_100f"``)."""
        return bare_sm(sm) in self.sms

    def to_json(self) -> dict[str, object]:
        return {
            "version": str(self.version),
            "variant": self.variant,
            "released": self.released,
            "min_driver_linux": format_driver(self.min_driver_linux),
            "family_min_driver_linux": format_driver(self.family_min_driver_linux),
            "sms": list(self.sms),
            "dropped": list(self.dropped),
            "source": self.source,
            "note": self.note,
        }


@frozen
class TorchRelease:
    """One torch minor release (``2.8``) and the wheels published for it."""

    version: Version = field_doc("The minor release, e.g. 2.8; rows ascend by version.")
    latest: Version = field_doc("Its newest patch release, e.g. 2.8.0.")
    released: str = field_doc("Month of the minor release, YYYY-MM.")
    cuda: tuple[str, ...] = field_doc(
        'CUDA versions with wheels on the PyTorch index (Linux x86_64): "12.8".', non_empty=True
    )
    pypi_cuda: str = field_doc("The CUDA version of the default wheel on PyPI.")
    pythons: tuple[str, ...] = field_doc(
        'CPython versions with Linux wheels, ascending: "3.12".', non_empty=True
    )
    cxx11_abi: tuple[bool, ...] = field_doc(
        "C++ ABI of the Linux pip wheels: [false] pre-cxx11, [true] cxx11, [false, true] both.",
        non_empty=True,
    )
    source: str = field_doc("https URL of the page the row comes from.")
    note: str = field_doc("Free text for people.", default="")
    manylinux: str = field_doc(
        'glibc floor of its PyPI Linux x86_64 wheels, from their platform tag: "2_28" '
        "(manylinux_2_28); empty where no floor an extension could meet is recorded.",
        default="",
        schema={"pattern": "^([0-9]+_[0-9]+)?$"},
    )

    @property
    def minor(self) -> str:
        """``"2.8"``."""
        return f"{self.version.major}.{self.version.minor}"

    @property
    def variants(self) -> tuple[str, ...]:
        """The index labels of :attr:`cuda`: ``("cu126", "cu128", "cu129")``."""
        return tuple("cu" + c.replace(".", "") for c in self.cuda)

    def has_cuda(self, cuda: str) -> bool:
        """True if a wheel for ``cuda`` (``"12.8"`` or ``"cu128"``) is on the PyTorch index."""
        text = cuda.strip().lower()
        return text in self.variants or text in self.cuda

    def to_json(self) -> dict[str, object]:
        return {
            "version": self.minor,
            "latest": str(self.latest),
            "released": self.released,
            "cuda": list(self.cuda),
            "pypi_cuda": self.pypi_cuda,
            "pythons": list(self.pythons),
            "cxx11_abi": list(self.cxx11_abi),
            "manylinux": self.manylinux,
            "source": self.source,
            "note": self.note,
        }


@frozen
class GpuModel:
    """A GPU model, the names NVML/nvidia-smi report for it, and its compute capability."""

    name: str = field_doc('The model, e.g. "H100"; unique with its aliases once normalised.')
    aliases: tuple[str, ...] = field_doc("Other names nvidia-smi / NVML report for it.")
    cc: str = field_doc('Compute capability, e.g. "9.0".')
    memory_gib: tuple[int, ...] = field_doc(
        "Memory sizes in GiB as sold (rounded).", non_empty=True
    )
    arch_family: str = field_doc('Architecture name, e.g. "Hopper".')
    source: str = field_doc("https URL of the page the row comes from.")
    note: str = field_doc("Free text for people.", default="")

    @property
    def sm(self) -> str:
        """The compute capability as an nvcc target number: ``"9.0"`` → ``"90"``."""
        return self.cc.replace(".", "")

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "aliases": list(self.aliases),
            "cc": self.cc,
            "sm": self.sm,
            "memory_gib": list(self.memory_gib),
            "arch_family": self.arch_family,
            "source": self.source,
            "note": self.note,
        }


@frozen
class PtxIsa:
    """One PTX ISA version (``.version 8.5``) and the CUDA release that first writes and loads it."""

    version: Version = field_doc("The PTX ISA version, e.g. 8.5; rows ascend by version.")
    cuda: Version = field_doc("The first CUDA release that knows it, e.g. 12.5.")
    source: str = field_doc("https URL of the page the row comes from.")
    note: str = field_doc("Free text for people.", default="")

    def to_json(self) -> dict[str, object]:
        return {
            "version": str(self.version),
            "cuda": str(self.cuda),
            "source": self.source,
            "note": self.note,
        }
