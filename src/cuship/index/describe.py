"""What the index manifest says of each wheel beyond its name: variant, arches found inside, and
what each shared object needs (``needs``: :class:`cuship.judge.WheelNeeds`' record, which the
resolver reads back to judge the wheel object by object)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cuship.errors import CushipError

__all__ = ["describe_pure", "describe_wheel"]

if TYPE_CHECKING:
    from packaging.version import Version

    from cuship.wheel.audit import WheelReport
    from cuship.wheel.read.zipmeta import Member


def describe_wheel(path: Path) -> Mapping[str, object]:
    """Label parts (CUDA, torch, C++ ABI), the SASS/PTX arches of every extension inside, and the
    torch ABI its binaries need (with the torch it was built against, when known). The wheel is
    held to its RECORD (:class:`~cuship.wheel.record.RecordMismatch`): an index publishes none
    whose RECORD disagrees with it."""
    # Imported here: an update whose wheels are all described in the cache never needs the
    # ELF and fatbin readers, and importing them is a third of `cuship index`'s start-up.
    from cuship.wheel.audit import inspect_wheel

    return _describe(inspect_wheel(path, record=True))


def describe_pure(
    path: str,
    name: str,
    version: Version,
    tags: tuple[str, ...],
    size: int,
    metadata: Member,
    *,
    requires_dist: Sequence[str] | None = None,
) -> Mapping[str, object]:
    """:func:`describe_wheel` of the wheel at ``path`` that the scan has read and found to hold
    no shared object (most of a community index), from what the scan parsed: no second read
    of the file. ``requires_dist``: the METADATA's Requires-Dist values, when the scan has
    read its headers already.

    The record is shared by every wheel of the same label and torch requirements (an index
    repeats a few such pairs many times): read it, never change it."""
    from cuship.wheel.torchabi import torch_entries, torch_requirements

    source = f"{path.rpartition('/')[2]}:{metadata.name}"
    if requires_dist is None:
        requirements = torch_requirements(metadata.data.decode("utf-8", "replace"), source=source)
    else:
        requirements = torch_entries(requires_dist, source=source)
    # Of a wheel without shared objects, _describe reads only the label and the requirements
    # on torch: the record is made once per pair (an index repeats a few pairs many times).
    key = (version.local, requirements)
    record = _PURE_RECORDS.get(key)
    if record is None:
        from cuship.wheel.audit import inspect_pure  # once per record, not per wheel

        record = _describe(inspect_pure(Path(path), name, version, tags, size, metadata))
        if len(_PURE_RECORDS) < _PURE_RECORDS_MAX:
            _PURE_RECORDS[key] = record
    return record


_PURE_RECORDS: dict[tuple[str | None, tuple[str, ...]], Mapping[str, object]] = {}
_PURE_RECORDS_MAX = 4096


def _describe(report: WheelReport) -> Mapping[str, object]:
    from cuship.wheel.names import parse_label

    doc: dict[str, object] = {"label": report.local}
    if report.local:
        try:
            variant = parse_label(report.local)
        except CushipError:
            pass
        else:
            doc["cuda"] = None if variant.cuda is None else str(variant.cuda)
            doc["torch"] = None if variant.torch is None else str(variant.torch)
            doc["cxx11abi"] = variant.cxx11abi
    needs = None
    if report.extensions:
        from cuship.judge.needs import wheel_needs

        needs = wheel_needs(report)
    # The package's own device code, as the runtime loads it (not the NVIDIA libraries it
    # bundles, not relocatable code): what a reader of the union alone may count on.
    doc["sass"] = list(needs.sass) if needs is not None else []
    doc["ptx"] = list(needs.ptx) if needs is not None else []
    doc["bundled_cuda_libs"] = list(report.bundled_cuda_libs)
    doc["torch_abi"] = report.torch_abi
    if report.torch_built is not None:
        doc["torch_built"] = report.torch_built
    if report.torch_requirement is not None:
        doc["torch_requirement"] = report.torch_requirement.requirement
    if needs is not None:
        doc["needs"] = needs.to_json()
    if report.variant is not None:
        doc["variant"] = dict(report.variant)
    return doc
