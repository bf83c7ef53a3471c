"""Inspect a wheel or a shared object into an immutable report (analyse first, decide later)."""

from __future__ import annotations

import mmap
import os
import re
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Literal

from packaging.version import Version

from cuship import _read
from cuship._read import NotRegular, open_regular, regular_problem
from cuship._record import frozen
from cuship.arch import sm_key
from cuship.errors import CushipError, InputError
from cuship.wheel.names import parse_label
from cuship.wheel.read.members import (
    MemberLimits,
    check_members,
    member_buffer,
    member_limits,
    read_member,
)
from cuship.wheel.read.zipmeta import Member, looks_shared, member_names, metadata_fast
from cuship.wheel.torchabi import (
    TorchAbi,
    TorchAbiFacts,
    TorchPin,
    classify,
    strictest,
    torch_entries,
    torch_pin,
    torch_requirements,
)

# The ELF, fatbin and CUDA-library readers are imported where a shared object is read: an
# index of pure wheels never needs them, and `cuship index` pays each import at start-up.
if TYPE_CHECKING:
    from cuship.wheel.read.elf import ElfFacts, VersionNeed
    from cuship.wheel.read.fatbin import Buffer, FatbinEntry
    from cuship.wheel.read.runtime import RuntimeFacts
    from cuship.wheel.record import RecordRow

__all__ = [
    "ROLES",
    "ObjectReport",
    "Role",
    "WheelReport",
    "inspect_object",
    "inspect_path",
    "inspect_wheel",
    "role_of",
    "scan_object",
]

_SMALL = 16 * 1024 * 1024  # wheels up to this size are read into memory whole
_EXTENSION_MODULE = re.compile(r"\.(cpython-|abi3\.|pypy)")


Role = Literal["extension", "library", "vendor"]
ROLES: tuple[Role, ...] = ("extension", "library", "vendor")
_MODULE_SUFFIX = re.compile(r"\.(cpython-[^/]*|abi3|pypy[^/]*)\.so$")


def role_of(path: str) -> Role:
    """What a shared object at ``path`` (in a wheel or a site directory) is to its package:

    - ``extension``: a Python extension module (``_C.cpython-311-….so``, ``_C.abi3.so``, ``_C.so``);
    - ``library``: another library of the package's own (``libbitsandbytes_cuda126.so`` loaded
      with ctypes, ``faiss_gpu_cu12.libs/libfaiss-6b43fd57.so`` that auditwheel moved aside);
    - ``vendor``: an NVIDIA library bundled as it is (``torchvision.libs/libnvjpeg.36e11081.so.13``,
      a bundled libcudart), whose device code is NVIDIA's and says nothing of the package's own.
    """
    from cuship.wheel.cudalibs import is_cuda_lib, is_vendor_lib
    from cuship.wheel.torchabi import is_torch_library

    base = path.rsplit("/", 1)[-1]
    if is_vendor_lib(base) or (is_cuda_lib(base) and not is_torch_library(base)):
        return "vendor"
    if _MODULE_SUFFIX.search(base) or not base.startswith("lib"):
        return "extension"
    return "library"


def _arches(entries: Iterable[FatbinEntry], kind: str) -> tuple[str, ...]:
    return tuple(sorted({e.sm for e in entries if e.kind == kind}, key=sm_key))


_RELOCATABLE_PREFIX = {"sass": "sm_", "ptx": "compute_", "lto": "lto_"}


def _relocatable(entries: Iterable[FatbinEntry]) -> tuple[str, ...]:
    """``sm_90``, ``compute_90``, ``lto_90``: the relocatable device code, by kind and arch."""
    found = {(e.kind, e.sm) for e in entries}
    ordered = sorted(found, key=lambda pair: (sm_key(pair[1]), pair[0]))
    return tuple(_RELOCATABLE_PREFIX[kind] + sm for kind, sm in ordered)


@frozen
class ObjectReport:
    """One ELF shared object: its device code per kind, compression, and what it links to."""

    path: str  # path inside the wheel, or on disk for a bare .so
    size: int
    machine: str
    soname: str | None
    needed: tuple[str, ...]
    sass: tuple[str, ...]  # SASS the CUDA runtime loads (.nv_fatbin)
    ptx: tuple[str, ...]  # PTX the CUDA runtime loads (.nv_fatbin)
    lto: tuple[str, ...]
    ptx_compressed: bool
    sass_compressed: bool
    fatbin_size: int
    entries: int
    containers: int
    torch: TorchAbiFacts = TorchAbiFacts()  # what it imports from torch, and the ABI that makes
    versions: tuple[VersionNeed, ...] = ()  # symbol versions it needs (GLIBC_2.34 of libc.so.6)
    # Relocatable device code (__nv_relfatbin, "sm_90", "compute_90"): kept for a device link,
    # never loaded by the runtime, so never counted as code a GPU runs.
    relocatable: tuple[str, ...] = ()
    # What the loader reads: every undefined dynamic symbol (those bound weakly apart), the
    # search paths it gives its own dependencies, DF_1_NODEFLIB.
    imports: tuple[str, ...] = ()
    weak: tuple[str, ...] = ()
    rpath: tuple[str, ...] = ()
    runpath: tuple[str, ...] = ()
    nodeflib: bool = False
    ptx_isa: tuple[str, ...] = ()  # the PTX ISA versions of the PTX the runtime loads ("8.5")
    runtime: RuntimeFacts | None = None  # what its strings say (dlopen names, static runtime)
    symbols_read: bool = True  # False: its undefined symbols were not read (a scan skipped them)

    @property
    def torch_abi(self) -> TorchAbi:
        return self.torch.abi

    @property
    def role(self) -> Role:
        """``extension``, ``library`` or ``vendor`` (:func:`role_of`)."""
        return role_of(self.path)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "role": self.role,
            "size": self.size,
            "machine": self.machine,
            "soname": self.soname,
            "needed": list(self.needed),
            "sass": list(self.sass),
            "ptx": list(self.ptx),
            "lto": list(self.lto),
            "ptx_compressed": self.ptx_compressed,
            "sass_compressed": self.sass_compressed,
            "fatbin_size": self.fatbin_size,
            "entries": self.entries,
            "containers": self.containers,
            "torch_abi": self.torch_abi,
            "torch": self.torch.to_json(),
            "versions": [v.to_json() for v in self.versions],
            "relocatable": list(self.relocatable),
            "undefined_symbols": len(self.imports),
            "rpath": list(self.rpath),
            "runpath": list(self.runpath),
            "ptx_isa": list(self.ptx_isa),
            "opens": (
                None
                if self.runtime is None or self.runtime.opens is None
                else list(self.runtime.opens)
            ),
            "static_runtime": self.runtime is not None and self.runtime.static_runtime,
            "toolkit": None if self.runtime is None else self.runtime.toolkit,
        }


@frozen
class WheelReport:
    """A wheel: its name and tags, every shared object in it, and the libraries it bundles."""

    path: str
    filename: str
    name: str
    version: str
    local: str | None
    tags: tuple[str, ...]
    size: int
    extensions: tuple[ObjectReport, ...]
    bundled_libs: tuple[str, ...]
    bundled_cuda_libs: tuple[str, ...]
    torch_requirement: TorchPin | None = None  # its Requires-Dist on torch, if any
    # its Requires-Dist entries that install NVIDIA libraries (nvidia-*, cuda-toolkit[...])
    nvidia_requirements: tuple[str, ...] = ()
    # a variant wheel's variant.json: its variants ({label: properties}); None: a plain wheel
    variant: Mapping[str, Any] | None = None

    @property
    def torch_abi(self) -> TorchAbi:
        """The strictest torch ABI of its shared objects (a wheel loads only where all do)."""
        return strictest(x.torch_abi for x in self.extensions)

    @property
    def torch_label(self) -> str | None:
        """The torch X.Y its local version label names (``+cu130torch2.13``), if any."""
        if self.local is None:
            return None
        try:
            variant = parse_label(self.local)
        except CushipError:  # a label cuship's default template cannot read names no torch
            return None
        return None if variant.torch is None else str(variant.torch)

    @property
    def torch_built(self) -> str | None:
        """The torch X.Y it was built against, when known: from the label, else the pin."""
        pin = self.torch_requirement
        return self.torch_label or (pin.built_against if pin is not None else None)

    @property
    def own(self) -> tuple[ObjectReport, ...]:
        """Its own objects: not the NVIDIA libraries it bundles (:func:`role_of`)."""
        return tuple(x for x in self.extensions if x.role != "vendor")

    @property
    def sass(self) -> tuple[str, ...]:
        """The SASS the runtime loads from its own objects."""
        return tuple(sorted({sm for x in self.own for sm in x.sass}, key=sm_key))

    @property
    def ptx(self) -> tuple[str, ...]:
        """The PTX the runtime loads from its own objects."""
        return tuple(sorted({sm for x in self.own for sm in x.ptx}, key=sm_key))

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "filename": self.filename,
            "name": self.name,
            "version": self.version,
            "local": self.local,
            "tags": list(self.tags),
            "size": self.size,
            "sass": list(self.sass),
            "ptx": list(self.ptx),
            "extensions": [x.to_json() for x in self.extensions],
            "bundled_libs": list(self.bundled_libs),
            "bundled_cuda_libs": list(self.bundled_cuda_libs),
            "torch_abi": self.torch_abi,
            "torch_requirement": (
                None if self.torch_requirement is None else self.torch_requirement.to_json()
            ),
            "torch_built": self.torch_built,
            "nvidia_requirements": list(self.nvidia_requirements),
            "variant": None if self.variant is None else dict(self.variant),
        }


def inspect_path(path: Path) -> WheelReport | ObjectReport:
    """Inspect a ``.whl`` file or a bare shared object; bad input raises :class:`InputError`."""
    problem = regular_problem(path)  # a FIFO, /dev/zero or a symlink loop, named as such
    if problem is not None:
        raise NotRegular(f"{str(path)!r} {problem}", hint="pass a .whl file or a .so file")
    if path.suffix == ".whl":
        return inspect_wheel(path)
    return inspect_object(path)


def inspect_object(path: Path) -> ObjectReport:
    """Inspect a shared object on disk, reading only headers and the fatbin sections (mmap)."""
    from cuship.wheel.read.elf import is_elf, quick_facts

    with open(open_regular(path, "shared object"), "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if not is_elf(handle.read(4)):
            raise InputError(f"{str(path)!r} is not an ELF file", hint="pass a .whl or a .so")
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            facts = quick_facts(mapped, source=str(path), wanted=_wanted())
            return _object_report(str(path), size, facts, mapped)


def _wanted() -> tuple[str, ...]:
    """The sections whose spans an object's report reads: the fatbin's and ``.rodata``."""
    from cuship.wheel.read.fatbin import FATBIN_SECTIONS
    from cuship.wheel.read.runtime import RUNTIME_SECTIONS

    return FATBIN_SECTIONS + RUNTIME_SECTIONS


def scan_object(
    path: Path, *, symbols: bool | tuple[bytes, ...] = True, name: str | None = None
) -> ObjectReport | None:
    """:func:`inspect_object` for scans over many files: read with :func:`quick_facts`; None
    when ``path`` is no ELF file. ``symbols`` as for :func:`quick_facts` (False: the torch ABI
    is read from DT_NEEDED alone); ``name`` is the report's path (default: ``path``)."""
    from cuship.wheel.read.elf import is_elf, quick_facts

    with open(open_regular(path, "shared object"), "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if not is_elf(handle.read(4)):
            return None
        if size < 64:
            raise InputError(
                f"{str(path)!r} is cut short: {size} bytes, less than an ELF header",
                hint="reinstall the package",
            )
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            facts = quick_facts(mapped, source=str(path), wanted=_wanted(), symbols=symbols)
            report = _object_report(name or str(path), size, facts, mapped)
            return (
                report if symbols is True else replace(report, symbols_read=bool(facts.undefined))
            )


def _object_report(where: str, size: int, facts: ElfFacts, data: Buffer) -> ObjectReport:
    from cuship.wheel.read.fatbin import FATBIN_SECTIONS, parse_sections
    from cuship.wheel.read.runtime import runtime_facts

    found = parse_sections(data, facts, source=where)
    entries = [e for e in found if not e.relocatable]
    spans = [facts.section(name) for name in FATBIN_SECTIONS]
    return ObjectReport(
        path=where,
        size=size,
        machine=facts.machine,
        soname=facts.soname,
        needed=facts.needed,
        sass=_arches(entries, "sass"),
        ptx=_arches(entries, "ptx"),
        lto=_arches(entries, "lto"),
        ptx_compressed=any(e.compressed for e in entries if e.kind == "ptx"),
        sass_compressed=any(e.compressed for e in entries if e.kind == "sass"),
        fatbin_size=sum(span.size for span in spans if span is not None),
        entries=len(entries),
        containers=len({e.container for e in found}),
        torch=classify(facts.needed, facts.undefined),
        versions=facts.versions,
        relocatable=_relocatable(e for e in found if e.relocatable),
        imports=facts.undefined,
        weak=facts.weak,
        rpath=facts.rpath,
        runpath=facts.runpath,
        nodeflib=facts.nodeflib,
        ptx_isa=tuple(sorted({e.isa for e in entries if e.isa}, key=_isa_key)),
        runtime=runtime_facts(data, facts),
    )


def _isa_key(isa: str) -> tuple[int, ...]:
    return tuple(int(part) for part in isa.split(".") if part.isdigit())


def inspect_wheel(path: Path, *, record: bool = False) -> WheelReport:
    """Inspect every shared object inside a wheel, and name the libraries it bundles.

    ``record``: also hold the wheel to its RECORD (:mod:`cuship.wheel.record`): the archive's
    members and sizes against RECORD's rows, and each shared object inflated against its hash
    (a :class:`~cuship.wheel.record.RecordMismatch` when they disagree). A small wheel with
    no shared object is not checked here: the index's scan checks its listing and METADATA."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    from cuship.wheel.variant import split_variant

    try:
        name, version, _build, tags = parse_wheel_filename(split_variant(path.name)[0])
    except InvalidWheelFilename as err:
        raise InputError(
            f"{path.name!r} is not a valid wheel file name: {err}",
            hint="wheel names look like name-1.0-cp311-cp311-linux_x86_64.whl",
        ) from err
    extensions, libs, requires = _scan_zip(path, record=record)
    canonical_tags = tuple(sorted(str(tag) for tag in tags))
    size = path.stat().st_size
    requirements = torch_entries(requires, source=f"{path.name}:METADATA")
    report = _report(path, str(name), version, canonical_tags, size, extensions, libs, requirements)
    label = split_variant(path.name)[1]
    if label is not None:
        report = replace(report, variant=_variant_of(path, label))
    if not extensions:
        return report
    from cuship.wheel.cudalibs import nvidia_requirements

    return replace(report, nvidia_requirements=nvidia_requirements(requires))


def _variant_of(path: Path, label: str) -> Mapping[str, Any]:
    """The variants of a wheel named with variant ``label``: its ``variant.json`` must be there
    and name that label (uv picks by the name, installs what the file says)."""
    from cuship.wheel.variant import read_wheel_variant

    document = read_wheel_variant(path)
    if document is None:
        raise InputError(
            f"{path.name!r} is named as variant {label!r} but holds no variant.json",
            hint="make variant wheels with `cuship variant`",
        )
    variants: Mapping[str, Any] = document["variants"]
    if label not in variants:
        said = ", ".join(map(repr, variants))
        raise InputError(
            f"{path.name!r} is named as variant {label!r}, its variant.json describes {said}",
            hint="make variant wheels with `cuship variant`: the label and the file agree",
        )
    return variants


def inspect_pure(
    path: Path, name: str, version: Version, tags: tuple[str, ...], size: int, metadata: Member
) -> WheelReport:
    """:func:`inspect_wheel` of a wheel already known to hold no shared object (``cuship
    index`` read its member names and METADATA as it hashed it): ``name``, ``version`` and
    ``tags`` (sorted) as parsed from its file name, ``metadata`` its ``*.dist-info/METADATA``.
    Raises as it does."""
    text = metadata.data.decode("utf-8", "replace")
    requirements = torch_requirements(text, source=f"{path.name}:{metadata.name}")
    return _report(path, name, version, tags, size, (), (), requirements)


def _report(
    path: Path,
    name: str,
    version: Version,
    tags: tuple[str, ...],
    size: int,
    extensions: tuple[ObjectReport, ...],
    libs: tuple[str, ...],
    requirements: tuple[str, ...],
) -> WheelReport:
    cuda_libs: tuple[str, ...] = ()
    if libs:
        from cuship.wheel.cudalibs import is_cuda_lib

        cuda_libs = tuple(lib for lib in libs if is_cuda_lib(lib))
    return WheelReport(
        path=str(path),
        filename=path.name,
        name=name,
        version=str(version),
        local=version.local,
        tags=tags,
        size=size,
        extensions=extensions,
        bundled_libs=libs,
        bundled_cuda_libs=cuda_libs,
        torch_requirement=torch_pin(requirements),
    )


def _scan_zip(
    path: Path, *, record: bool = False
) -> tuple[tuple[ObjectReport, ...], tuple[str, ...], tuple[str, ...]]:
    """The wheel's shared objects, its bundled libraries and its Requires-Dist entries (of a
    wheel without shared objects: only those on torch); ``record`` as :func:`inspect_wheel`."""
    small = _scan_small(path)
    if small is not None:
        return (), (), small
    limits = member_limits()
    try:
        with _read.archive(path) as archive, _read.reader(path, _read.ARCHIVE) as handle:
            check_members(archive.infolist(), path.name, limits)
            rows = _record_rows(archive, path, limits) if record else None
            objects = list(_shared_objects(archive, path, limits, handle, rows))
            requirements = _requires_dist(archive, path, limits)
    except (zipfile.BadZipFile, EOFError) as err:
        raise InputError(
            f"{str(path)!r} is not a readable wheel (zip): {err}",
            hint="the download may be cut short; fetch or build the wheel again",
        ) from err
    libs = tuple(sorted(member for member, _ in objects if _is_library(member)))
    reports = tuple(report for _, report in objects if report is not None)
    return reports, libs, requirements


def _scan_small(path: Path) -> tuple[str, ...] | None:
    """The Requires-Dist values of a small wheel with no shared object, read from its bytes
    without :mod:`zipfile` (whose per-member objects cost most of describing a pure-Python
    wheel in an index of thousands); None when the archive must be read in full."""
    try:
        if path.stat().st_size > _SMALL:
            return None
        data = _read.read_bytes(path, _read.ARCHIVE, limit=_SMALL)
    except (OSError, _read.Refused):
        return None  # the zipfile path words the error
    return _small_requirements(data)


def _small_requirements(data: bytes) -> tuple[str, ...] | None:
    """:func:`_scan_small` of bytes already read."""
    names = member_names(data)
    if names is None or any(looks_shared(name) for name in names):
        return None
    member = metadata_fast(data)
    if member is None:
        return None
    from cuship.wheel.read.headers import header_fields

    text = member.data.decode("utf-8", "replace")
    return tuple(value for key, value in header_fields(text) if key == "requires-dist")


def _requires_dist(archive: zipfile.ZipFile, path: Path, limits: MemberLimits) -> tuple[str, ...]:
    """The Requires-Dist values of the top-level ``*.dist-info/METADATA`` (none without one)."""
    from cuship.wheel.read.headers import header_fields
    from cuship.wheel.read.zipmeta import METADATA_LIMIT

    member = next(
        (
            i
            for i in archive.infolist()
            if i.filename.count("/") == 1 and i.filename.endswith(".dist-info/METADATA")
        ),
        None,
    )
    if member is None:
        return ()
    data = read_member(archive, member, path.name, limits, most=METADATA_LIMIT)
    text = data.decode("utf-8", "replace")
    return tuple(value for key, value in header_fields(text) if key == "requires-dist")


def _record_rows(
    archive: zipfile.ZipFile, path: Path, limits: MemberLimits
) -> tuple[str, Mapping[str, RecordRow]]:
    """The wheel's RECORD and its rows, after checking them against the archive's members."""
    from cuship.wheel.record import (
        RECORD_LIMIT,
        check_listing,
        missing_record,
        parse_record,
        record_name,
    )

    infos = archive.infolist()
    metadata = [i.filename for i in infos if _top_metadata(i.filename)]
    record = record_name(metadata[0]) if len(metadata) == 1 else "*.dist-info/RECORD"
    try:
        info = archive.getinfo(record)
    except KeyError:
        raise missing_record(path.name, record) from None
    rows = parse_record(read_member(archive, info, path.name, limits, most=RECORD_LIMIT),
                        path.name, record)  # fmt: skip
    check_listing(rows, ((i.filename, i.file_size) for i in infos), path.name, record)
    return record, rows


def _top_metadata(name: str) -> bool:
    return name.count("/") == 1 and name.endswith(".dist-info/METADATA")


def _shared_objects(
    archive: zipfile.ZipFile,
    path: Path,
    limits: MemberLimits,
    handle: BinaryIO | None = None,
    rows: tuple[str, Mapping[str, RecordRow]] | None = None,
) -> Iterator[tuple[str, ObjectReport | None]]:
    """Each shared object's name, and its report (None for a bundled CUDA library, never
    inflated); each read through :func:`~cuship.wheel.read.members.member_buffer` (bounded), from
    ``handle`` (the wheel opened again) when given; with RECORD's ``rows``, each one read is
    held to its hash there."""
    from cuship.wheel.cudalibs import is_cuda_lib
    from cuship.wheel.read.elf import is_elf, quick_facts
    from cuship.wheel.record import check_digest, hasher

    for info in archive.infolist():
        if info.is_dir() or not looks_shared(info.filename):
            continue
        with archive.open(info) as member:
            head = member.read(4)
        if not is_elf(head):
            continue
        if is_cuda_lib(info.filename):  # never inflate a bundled libcublas' 500 MB of kernels
            yield info.filename, None
            continue
        where = f"{path.name}:{info.filename}"
        row = None if rows is None else rows[1].get(info.filename)
        digest = hasher(row)
        with member_buffer(archive, info, path.name, limits, handle=handle, digest=digest) as data:
            if digest is not None and rows is not None:
                check_digest(row, digest.digest(), info.filename, path.name, rows[0])
            facts = quick_facts(data, source=where, wanted=_wanted())
            report = _object_report(info.filename, info.file_size, facts, data)
        yield info.filename, report


def _is_library(member: str) -> bool:
    """A shared library (not a Python extension module): in a ``*.libs/`` dir, or ``lib*.so*``."""
    parts = member.split("/")
    if len(parts) > 1 and parts[0].endswith(".libs"):
        return True
    base = parts[-1]
    return base.startswith("lib") and not _EXTENSION_MODULE.search(base)
