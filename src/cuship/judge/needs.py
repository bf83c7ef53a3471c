"""What a wheel (or an installed distribution) needs from a machine, per shared object, read from
its files (pure: the caller reads the ELF facts and METADATA).

Each shared object has a role (:func:`cuship.wheel.audit.role_of`): an ``extension`` module or
a ``library`` of the package's own, whose device code is the package's, or a ``vendor`` library
(an NVIDIA library bundled as it is), whose device code never says which GPUs the package's
kernels run on.

Per object: the SASS and PTX the CUDA runtime loads (``.nv_fatbin``; relocatable device code is
kept apart and never counted), the NVIDIA libraries it links by SONAME (``libcudart.so.12``: a
CUDA 12 runtime), torch's libraries and ABI (``libc10_cuda.so``: a CUDA build of torch), and
whether it imports ``std::__cxx11`` names. Per wheel: the libraries it carries (a needed library
may come from there), its Requires-Dist entries that install NVIDIA libraries, its torch pin and
what its local version label says.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from packaging.version import InvalidVersion, Version

from cuship._record import frozen
from cuship.arch import sm_key
from cuship.errors import CushipError, InputError
from cuship.wheel.audit import ROLES, ObjectReport, Role, WheelReport, role_of
from cuship.wheel.cudalibs import cuda_major_of, is_nvidia_lib
from cuship.wheel.names import parse_label
from cuship.wheel.read.elf import VersionNeed
from cuship.wheel.torchabi import (
    TORCH_ABIS,
    TorchAbi,
    TorchPin,
    strictest,
    torch_flavour_needed,
    torch_pin,
)

__all__ = [
    "ROLES",
    "ObjectNeeds",
    "Role",
    "WheelNeeds",
    "object_needs",
    "role_of",
    "wheel_needs",
]


@frozen
class ObjectNeeds:
    """One shared object: its role, the device code the runtime loads, what it links."""

    path: str
    role: Role
    sass: tuple[str, ...] = ()
    ptx: tuple[str, ...] = ()
    relocatable: tuple[str, ...] = ()  # __nv_relfatbin: "sm_90", "compute_90"; never runnable
    libraries: tuple[str, ...] = ()  # the NVIDIA libraries it needs (DT_NEEDED SONAMEs)
    torch_abi: TorchAbi = "none"
    torch_libraries: tuple[str, ...] = ()  # libtorch*/libc10* it needs
    torch_symbol: str | None = None  # one torch symbol it imports (the evidence)
    cxx11: bool | None = None  # True: it imports std::__cxx11 names
    # What the loader reads (cuship.judge.ldso): every DT_NEEDED, the search paths it gives
    # its own needs, its undefined symbols (None: not known, as from an index's record), the
    # versions it needs, what it opens itself; and what its bytes say of its CUDA release.
    needed: tuple[str, ...] = ()
    rpath: tuple[str, ...] = ()
    runpath: tuple[str, ...] = ()
    nodeflib: bool = False
    imports: tuple[str, ...] | None = None
    weak: tuple[str, ...] = ()
    versions: tuple[VersionNeed, ...] = ()
    opens: tuple[str, ...] | None = None  # names in its strings when it imports dlopen
    static_runtime: bool = False
    toolkit: str | None = None  # "12.9": the CUDA release its cubins say made them
    ptx_isa: tuple[str, ...] = ()  # the ISA versions of its PTX ("8.5")
    location: str | None = None  # its path on this machine, when installed

    @property
    def device(self) -> bool:
        """Whether it carries device code the runtime loads."""
        return bool(self.sass or self.ptx)

    @property
    def cuda_majors(self) -> tuple[int, ...]:
        """The CUDA majors the SONAMEs of the libraries it needs name (libcudart.so.12: 12)."""
        found = {cuda_major_of(lib) for lib in self.libraries}
        return tuple(sorted(m for m in found if m is not None))

    @property
    def torch_flavour(self) -> str | None:
        """The torch build it needs: ``cuda`` (it links libc10_cuda/libtorch_cuda), ``rocm``,
        ``xpu``; None: any (or no torch)."""
        return torch_flavour_needed(self.torch_libraries)

    @property
    def links_torch(self) -> bool:
        return bool(self.torch_libraries) or self.torch_abi != "none"

    @property
    def matters(self) -> bool:
        """Whether the judge has anything to check in it."""
        return bool(
            self.device
            or self.relocatable
            or self.libraries
            or self.links_torch
            or self.static_runtime
            or any(is_nvidia_lib(name) for name in self.opens or ())
        )

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"path": self.path, "role": self.role}
        for key, value in (
            ("sass", self.sass),
            ("ptx", self.ptx),
            ("relocatable", self.relocatable),
            ("libraries", self.libraries),
            ("torch_libraries", self.torch_libraries),
            ("needed", self.needed),
            ("rpath", self.rpath),
            ("runpath", self.runpath),
            ("ptx_isa", self.ptx_isa),
        ):
            if value:
                doc[key] = list(value)
        optional: tuple[tuple[str, object, object], ...] = (
            ("torch_abi", self.torch_abi, "none"),
            ("torch_symbol", self.torch_symbol, None),
            ("cxx11", self.cxx11, None),
            ("opens", None if self.opens is None else list(self.opens), None),
            ("static_runtime", self.static_runtime, False),
            ("toolkit", self.toolkit, None),
        )
        doc.update({key: value for key, value, unset in optional if value != unset})
        return doc


@frozen
class WheelNeeds:
    """A wheel or installed distribution: its objects' needs and what its metadata says.

    ``complete`` is False when the objects are not known one by one (an index manifest written
    before cuship recorded them: its ``sass``/``ptx`` union stands as one object), and
    ``unread`` names the objects that could not be read: the checks they would need are said
    not to have run.
    """

    name: str
    version: str
    objects: tuple[ObjectNeeds, ...] = ()
    bundled: tuple[str, ...] = ()  # file names of the shared libraries it carries
    requires: tuple[str, ...] = ()  # Requires-Dist entries that install NVIDIA libraries
    torch_requirement: TorchPin | None = None
    label_cuda: str | None = None  # the CUDA its local label names (13.0)
    label_torch: str | None = None  # the torch X.Y its local label names
    label_cxx11abi: bool | None = None
    tags: tuple[str, ...] = ()
    unread: tuple[str, ...] = ()
    complete: bool = True
    index: str | None = None  # the index it was installed from, when known

    @property
    def own(self) -> tuple[ObjectNeeds, ...]:
        """Its own objects (extensions and libraries), not the NVIDIA libraries it bundles."""
        return tuple(o for o in self.objects if o.role != "vendor")

    @property
    def sass(self) -> tuple[str, ...]:
        return _union(o.sass for o in self.own)

    @property
    def ptx(self) -> tuple[str, ...]:
        return _union(o.ptx for o in self.own)

    @property
    def torch_abi(self) -> TorchAbi:
        return strictest(o.torch_abi for o in self.objects)

    @property
    def torch_built(self) -> str | None:
        """The torch X.Y it was built against: its label, else its torch pin."""
        pin = self.torch_requirement
        return self.label_torch or (pin.built_against if pin is not None else None)

    def to_json(self) -> dict[str, Any]:
        """The record a manifest keeps (``describe.needs``); :meth:`from_json` reads it back."""
        doc: dict[str, Any] = {
            "objects": [o.to_json() for o in self.objects if o.matters],
        }
        if self.bundled:
            doc["bundled"] = list(self.bundled)
        if self.requires:
            doc["requires"] = list(self.requires)
        if self.unread:
            doc["unread"] = list(self.unread)
        return doc


def _union(groups: Iterable[Sequence[str]]) -> tuple[str, ...]:
    return tuple(sorted({sm for group in groups for sm in group}, key=sm_key))


def object_needs(report: ObjectReport, *, location: str | None = None) -> ObjectNeeds:
    """The needs of one shared object from its report; ``location``: its path on this machine
    (an installed object), where the loader looks from."""
    torch = report.torch
    runtime = report.runtime
    return ObjectNeeds(
        path=report.path,
        role=report.role,
        sass=report.sass,
        ptx=report.ptx,
        relocatable=report.relocatable,
        libraries=tuple(lib for lib in report.needed if is_nvidia_lib(lib)),
        torch_abi=torch.abi,
        torch_libraries=torch.libraries,
        torch_symbol=torch.example,
        cxx11=torch.cxx11,
        needed=report.needed,
        rpath=report.rpath,
        runpath=report.runpath,
        nodeflib=report.nodeflib,
        imports=report.imports if report.symbols_read else None,
        weak=report.weak,
        versions=report.versions,
        opens=None if runtime is None else runtime.opens,
        static_runtime=runtime is not None and runtime.static_runtime,
        toolkit=None if runtime is None else runtime.toolkit,
        ptx_isa=report.ptx_isa,
        location=location,
    )


def label_parts(local: str | None) -> tuple[str | None, str | None, bool | None]:
    """(CUDA, torch X.Y, cxx11abi) a local version label names."""
    if not local:
        return None, None, None
    try:
        variant = parse_label(local)
    except CushipError:
        return None, None, None
    return (
        None if variant.cuda is None else str(variant.cuda),
        None if variant.torch is None else f"{variant.torch.major}.{variant.torch.minor}",
        variant.cxx11abi,
    )


def wheel_needs(report: WheelReport) -> WheelNeeds:
    """The needs of a wheel from its report (objects, the libraries it carries, its NVIDIA
    requirements, torch pin, label and tags)."""
    cuda, torch, cxx11abi = label_parts(report.local)
    bundled = tuple(dict.fromkeys(lib.rsplit("/", 1)[-1] for lib in report.bundled_libs))
    return WheelNeeds(
        name=report.name,
        version=report.version,
        objects=tuple(object_needs(x) for x in report.extensions),
        bundled=bundled,
        requires=report.nvidia_requirements,
        torch_requirement=report.torch_requirement,
        label_cuda=cuda,
        label_torch=torch,
        label_cxx11abi=cxx11abi,
        tags=report.tags,
    )


def pin_of(requirement: str | None) -> TorchPin | None:
    """A torch pin from its requirement text (``torch==2.13.*``), None for none or nonsense."""
    if not requirement:
        return None
    try:
        return torch_pin([requirement])
    except (CushipError, ValueError):
        return None


def minor_of(version: str | None) -> str | None:
    """``2.13.0+cpu`` -> ``2.13``; None for None or nonsense."""
    if version is None:
        return None
    try:
        release = Version(version).release
    except InvalidVersion:
        return None
    return f"{release[0]}.{release[1] if len(release) > 1 else 0}"


def minor_tuple(version: str | None) -> tuple[int, int] | None:
    """``2.13.0+cpu`` -> ``(2, 13)``; None for None or nonsense."""
    text = minor_of(version)
    if text is None:
        return None
    major, _, minor = text.partition(".")
    return int(major), int(minor)


def check_abi(value: object) -> TorchAbi:
    """A torch ABI read from a record; InputError for anything else."""
    if value not in TORCH_ABIS:
        raise InputError(f"torch_abi {value!r} is not one of {', '.join(TORCH_ABIS)}")
    return value
