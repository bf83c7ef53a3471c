"""Checks on the compatibility data: each finds one kind of mistake and names the row and key."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence

from packaging.version import InvalidVersion, Version

from cuship.arch import is_table_cc, is_table_sm
from cuship.compat.models import CudaToolkit, GpuModel, PtxIsa, TorchRelease
from cuship.schema import Place

__all__ = ["check_gpus", "check_ptx", "check_toolkits", "check_torch"]

MONTH_PATTERN = re.compile(r"^(19|20)[0-9]{2}-(0[1-9]|1[0-2])$")
GLIBC_FLOOR_PATTERN = re.compile(r"^[0-9]+_[0-9]+$")


def _common(row: Place, released: str | None, source: str) -> None:
    if released is not None and not MONTH_PATTERN.match(released):
        raise row.fail("released", f"{released!r} is not a month", hint='write it like "2025-03"')
    if not source.startswith("https://"):
        raise row.fail(
            "source", f"{source!r} is not an https URL", hint="cite the page the row comes from"
        )


def _ascending(rows: Sequence[tuple[Place, Version]], name: str) -> None:
    for (_, before), (row, after) in itertools.pairwise(rows):
        if after == before:
            raise row.fail(name, f"duplicate {str(after)!r}")
        if after < before:
            raise row.fail(
                name, f"{str(after)!r} comes after {str(before)!r}", hint="keep rows sorted"
            )


def _check_sms(row: Place, sms: Sequence[str], name: str) -> None:
    seen: set[str] = set()
    for sm in sms:
        if not is_table_sm(sm):
            raise row.fail(
                name, f"{sm!r} is not an SM", hint='write targets like "90", "90a", "100f"'
            )
        if sm in seen:
            raise row.fail(name, f"{sm!r} listed twice")
        if sm[-1] in "af" and name == "sms" and sm[:-1] not in sms:
            raise row.fail(name, f"{sm!r} listed without its base target {sm[:-1]!r}")
        seen.add(sm)


def _check_toolkit(row: Place, toolkit: CudaToolkit, previous: CudaToolkit | None) -> None:
    _common(row, toolkit.released, toolkit.source)
    _check_sms(row, toolkit.sms, "sms")
    _check_sms(row, toolkit.dropped, "dropped")
    if toolkit.min_driver_linux < toolkit.family_min_driver_linux:
        raise row.fail("min_driver_linux", "is below family_min_driver_linux")
    kept = set(toolkit.dropped) & set(toolkit.sms)
    if kept:
        raise row.fail("dropped", f"{sorted(kept)[0]!r} is both dropped and in sms")
    if previous is None:
        return
    unknown = set(toolkit.dropped) - set(previous.sms)
    if unknown:
        raise row.fail("dropped", f"{sorted(unknown)[0]!r} was not in {previous.version}'s sms")
    same_major = previous.version.major == toolkit.version.major
    if same_major and previous.family_min_driver_linux != toolkit.family_min_driver_linux:
        raise row.fail("family_min_driver_linux", f"differs from {previous.version}'s")


def check_toolkits(rows: Sequence[tuple[Place, CudaToolkit]]) -> None:
    """Versions unique and ascending, SMs well formed, drops consistent with the row before."""
    _ascending([(row, t.version) for row, t in rows], "version")
    previous: CudaToolkit | None = None
    for row, toolkit in rows:
        _check_toolkit(row, toolkit, previous)
        previous = toolkit


def _check_pythons(row: Place, pythons: Sequence[str]) -> None:
    try:
        versions = [Version(p) for p in pythons]
    except InvalidVersion as err:
        raise row.fail("pythons", f"{list(pythons)!r} holds a non-version") from err
    if not versions or versions != sorted(set(versions)):
        raise row.fail("pythons", "must be non-empty, sorted, without duplicates")


def _check_release(row: Place, release: TorchRelease, known_cuda: set[str]) -> None:
    _common(row, release.released, release.source)
    if (release.latest.major, release.latest.minor) != (
        release.version.major,
        release.version.minor,
    ) or len(release.version.release) != 2:
        raise row.fail(
            "latest", f"{str(release.latest)!r} is not a patch of {str(release.version)!r}"
        )
    for cuda in release.cuda:
        if cuda not in known_cuda:
            raise row.fail(
                "cuda", f"{cuda!r} is no toolkit in cuda.toml", hint="add the toolkit first"
            )
    if release.pypi_cuda not in release.cuda:
        raise row.fail("pypi_cuda", f"{release.pypi_cuda!r} is not among cuda")
    if release.manylinux and not GLIBC_FLOOR_PATTERN.match(release.manylinux):
        raise row.fail(
            "manylinux", f"{release.manylinux!r} is not a glibc floor", hint='write it like "2_28"'
        )
    _check_pythons(row, release.pythons)


def check_torch(rows: Sequence[tuple[Place, TorchRelease]], known_cuda: set[str]) -> None:
    """Releases unique and ascending; their CUDA variants name toolkits that exist."""
    _ascending([(row, r.version) for row, r in rows], "version")
    for row, release in rows:
        _check_release(row, release, known_cuda)


def check_gpus(
    rows: Sequence[tuple[Place, GpuModel]], known_sms: set[str], key: Callable[[str], str]
) -> None:
    """Compute capabilities known to some toolkit; no name or alias claimed by two models."""
    owner: dict[str, str] = {}
    for row, gpu in rows:
        _common(row, None, gpu.source)
        if not is_table_cc(gpu.cc) or gpu.cc.replace(".", "") not in known_sms:
            raise row.fail("cc", f"{gpu.cc!r} is not a compute capability any toolkit targets")
        for label in (gpu.name, *gpu.aliases):
            normal = key(label)
            if not normal:
                raise row.fail("aliases", f"{label!r} is empty once normalised")
            if owner.get(normal, gpu.name) != gpu.name:
                raise row.fail("aliases", f"{label!r} is already a name of {owner[normal]!r}")
            owner[normal] = gpu.name


def check_ptx(rows: Sequence[tuple[Place, PtxIsa]]) -> None:
    """PTX ISA rows: ascending, each with an https source, each CUDA release not before the
    one of the row above."""
    _ascending([(row, isa.version) for row, isa in rows], "version")
    for (_, before), (row, after) in itertools.pairwise(rows):
        if after.cuda < before.cuda:
            raise row.fail("cuda", f"{str(after.cuda)!r} is older than the row above's")
    for row, isa in rows:
        _common(row, None, isa.source)
