"""The glibc floor a job's wheel is held to (pure): ``[build] manylinux`` when set, which makes
a wheel above it fail verification; otherwise the floor of the torch release the job targets
(torch.toml), else ``2_28``, and a wheel above it earns a warning only, since a workstation's
newer glibc would otherwise fail every local build."""

from __future__ import annotations

from dataclasses import dataclass

from cuship.compat import Compat, load
from cuship.config import BuildSection
from cuship.errors import UsageError
from cuship.matrix import BuildJob

__all__ = ["DEFAULT_FLOOR", "GlibcFloor", "glibc_floor"]

DEFAULT_FLOOR = "2_28"
"""PyTorch's own Linux wheels are manylinux_2_28 since torch 2.7 (torch.toml)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GlibcFloor:
    """A floor (``"2_28"``), whether a wheel above it fails (else: a warning), and whence."""

    floor: str
    enforced: bool
    why: str


def _torch_floor(job: BuildJob, compat: Compat) -> str | None:
    if job.torch is None:
        return None
    try:
        release = compat.torch_release(f"{job.torch.major}.{job.torch.minor}")
    except UsageError:
        return None
    return release.manylinux or None


def glibc_floor(job: BuildJob, build: BuildSection, compat: Compat | None = None) -> GlibcFloor:
    """The floor ``job``'s wheel is verified (``[build] manylinux``) or warned against."""
    if build.manylinux:
        return GlibcFloor(floor=build.manylinux, enforced=True, why="[build] manylinux")
    torch = _torch_floor(job, compat or load())
    if torch is not None and job.torch is not None:
        why = f"the floor of torch {job.torch.major}.{job.torch.minor}'s wheels"
        return GlibcFloor(floor=torch, enforced=False, why=why)
    return GlibcFloor(floor=DEFAULT_FLOOR, enforced=False, why="cuship's default floor")
