"""The state of one judgement while its checks run: the wheel, the machine, the context, and
what the checks have found so far (each check module reads and adds to it)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from packaging.version import Version

from cuship._record import frozen
from cuship.compat import Compat
from cuship.compat.models import format_driver
from cuship.errors import CushipError
from cuship.judge.gpu import driver_runs
from cuship.judge.model import (
    Area,
    Check,
    Coverage,
    GlibcVerdict,
    GpuRun,
    LibraryNeed,
    ObjectLoad,
    Status,
    TorchVerdict,
)
from cuship.judge.needs import ObjectNeeds, WheelNeeds
from cuship.judge.offer import Offer

__all__ = ["Context", "Judging"]


@frozen
class Context:
    """How the wheel is judged: ``installing`` (before an install: the torch and NVIDIA wheels
    its requirements bring will be there, with ``extras`` switched on) or as installed."""

    installing: bool = False
    extras: frozenset[str] = frozenset()
    # Mangled C++ names -> readable ones (c++filt, run by the caller); None: left mangled.
    demangle: Callable[[Sequence[str]], Sequence[str]] | None = field(default=None, compare=False)


@dataclass(slots=True)
class Judging:
    """One wheel on one machine while the checks run."""

    needs: WheelNeeds
    offer: Offer
    compat: Compat
    context: Context
    checks: list[Check] = field(default_factory=list)
    gpus: tuple[GpuRun, ...] = ()
    libraries: tuple[LibraryNeed, ...] = ()
    torch: TorchVerdict = TorchVerdict()
    glibc: GlibcVerdict = GlibcVerdict()
    coverage: Coverage = "cpu"
    cuda_major: int | None = None
    objects: tuple[ObjectNeeds, ...] = ()  # the objects judged (the chosen CUDA's, and the rest)
    loads: tuple[ObjectLoad, ...] = ()  # the installed own objects, loaded as ld.so would
    # SONAME -> where the loader found it (None: nowhere), and a directory ld.so.conf names
    # that holds it though the loader cache does not list it
    found: dict[str, str | None] = field(default_factory=dict)
    stale: dict[str, str] = field(default_factory=dict)
    bound_torch: bool | None = None  # every torch symbol bound (True), some not (False), not tried

    def add(self, area: Area, status: Status, message: str, fix: str = "") -> None:
        """Record one check's outcome."""
        self.checks.append(Check(area=area, status=status, message=message, fix=fix))

    def runs_major(self, major: int) -> bool | None:
        return driver_runs(
            Version(str(major)),
            driver_version=self.offer.driver_version,
            driver_cuda=self.offer.driver_cuda,
            jit=False,
            compat=self.compat,
        )

    @property
    def own(self) -> tuple[ObjectNeeds, ...]:
        return tuple(o for o in self.objects if o.role != "vendor")

    def driver_text(self) -> str:
        offer = self.offer
        if offer.driver_version and offer.driver_cuda:
            return f"driver {offer.driver_version} runs CUDA {offer.driver_cuda} at most"
        if offer.driver_version:
            return f"driver {offer.driver_version} is too old"
        return f"the driver runs CUDA {offer.driver_cuda} at most"

    def family_minimum(self, major: int) -> str | None:
        try:
            toolkit = self.compat.cuda(str(major))
        except CushipError:
            return None
        return format_driver(toolkit.family_min_driver_linux)
