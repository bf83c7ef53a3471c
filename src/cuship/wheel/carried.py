"""The report of a relabelled wheel, carried over from the report of the wheel it was written
from: a built wheel's shared objects are inspected once, after the last tool that changes them.

A retag (:mod:`cuship.wheel.write.retag`) rewrites a wheel's name, its METADATA (version,
Requires-Dist) and its RECORD, and renames its ``.dist-info`` and ``.data`` directories; every
other member is copied through :func:`~cuship.wheel.read.members.copy_into`, inflated and
written again, so the new archive's central directory holds a CRC-32 computed afresh from the
bytes copied. The shared objects' facts (ELF, fatbin, what they need and import) therefore hold
for the new wheel when each shared object is there with the size and CRC-32 of the one
inspected: that is checked here from the two central directories, never assumed, and a wheel
where it fails is inspected whole. What a retag changes (name, version, label, size, the
Requires-Dist read into the report) is read from the new wheel's name and METADATA.
"""

from __future__ import annotations

import dataclasses
import zipfile
from collections.abc import Mapping
from pathlib import Path

from cuship import _read
from cuship.wheel.audit import WheelReport, inspect_wheel

__all__ = ["carried_report"]


def carried_report(report: WheelReport, source: Path, target: Path) -> WheelReport:
    """The report of ``target``, a relabelled copy of ``source`` whose report is ``report``:
    its shared objects' facts carried over when ``target`` holds each with the bytes ``source``
    held (size and CRC-32), else :func:`~cuship.wheel.audit.inspect_wheel` of ``target``."""
    from packaging.utils import parse_wheel_filename

    from cuship.wheel.variant import split_variant

    if split_variant(target.name)[1] is not None or not report.extensions:
        return inspect_wheel(target)  # a variant's variant.json, a wheel read fast anyway
    name, version, _, tags = parse_wheel_filename(target.name)
    same_tags = tuple(sorted(str(tag) for tag in tags)) == report.tags
    if str(name) != report.name or not same_tags:
        return inspect_wheel(target)
    with _read.archive(source) as old, _read.archive(target) as new:
        moved = _moved(report, old, new)
        requires = _requires_dist(new, target) if moved is not None else None
    if moved is None or requires is None:
        return inspect_wheel(target)
    return _relabelled(report, target, str(version), version.local, moved, requires)


def _relabelled(
    report: WheelReport,
    target: Path,
    version: str,
    local: str | None,
    moved: Mapping[str, str],
    requires: tuple[str, ...],
) -> WheelReport:
    """``report`` with ``target``'s name, size and requirements, its objects where they moved."""
    from cuship.wheel.cudalibs import nvidia_requirements
    from cuship.wheel.torchabi import torch_entries, torch_pin

    pins = torch_entries(requires, source=f"{target.name}:METADATA")
    return dataclasses.replace(
        report,
        path=str(target),
        filename=target.name,
        version=version,
        local=local,
        size=target.stat().st_size,
        extensions=tuple(dataclasses.replace(x, path=moved[x.path]) for x in report.extensions),
        bundled_libs=tuple(moved[lib] for lib in report.bundled_libs),
        bundled_cuda_libs=tuple(moved[lib] for lib in report.bundled_cuda_libs),
        torch_requirement=torch_pin(pins),
        nvidia_requirements=nvidia_requirements(requires),
    )


def _moved(
    report: WheelReport, old: zipfile.ZipFile, new: zipfile.ZipFile
) -> dict[str, str] | None:
    """Each shared object the report names (its objects, its bundled libraries) → its name in
    ``new``, where it must hold the bytes it held in ``old`` (size, CRC-32); None when one
    does not."""
    data = {n.split("/", 1)[0] for n in new.namelist() if n.split("/", 1)[0].endswith(".data")}
    names = {*(x.path for x in report.extensions), *report.bundled_libs}
    moved: dict[str, str] = {}
    for name in names:
        top, _, rest = name.partition("/")
        where = f"{next(iter(data))}/{rest}" if top.endswith(".data") and len(data) == 1 else name
        try:
            before, after = old.getinfo(name), new.getinfo(where)
        except KeyError:
            return None
        if (before.CRC, before.file_size) != (after.CRC, after.file_size):
            return None
        moved[name] = where
    return moved


def _requires_dist(archive: zipfile.ZipFile, path: Path) -> tuple[str, ...] | None:
    """The Requires-Dist values of the top-level ``*.dist-info/METADATA``; None without one."""
    from cuship.wheel.read.headers import header_fields
    from cuship.wheel.read.members import member_limits, read_member
    from cuship.wheel.read.zipmeta import METADATA_LIMIT

    found = [
        i
        for i in archive.infolist()
        if i.filename.count("/") == 1 and i.filename.endswith(".dist-info/METADATA")
    ]
    if len(found) != 1:
        return None
    data = read_member(archive, found[0], path.name, member_limits(), most=METADATA_LIMIT)
    text = data.decode("utf-8", "replace")
    return tuple(value for key, value in header_fields(text) if key == "requires-dist")
