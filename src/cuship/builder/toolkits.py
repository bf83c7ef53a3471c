"""Which CUDA toolkit a job builds with: the host's nvcc, or (``[build] toolkits = "fetch"``) one
assembled from NVIDIA's PyPI wheels in the toolkit cache. Pure: the planner names the cached
prefix and adds the step that fetches it; running the plan fetches."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from cuship import settings
from cuship.builder.container import image_for
from cuship.builder.model import Host, Step
from cuship.config import BuildSection
from cuship.matrix import BuildJob
from cuship.toolkit import ToolkitRelease, catalog, runner_hint, toolkit_prefix

__all__ = ["CUDA_WAYS_OUT", "ToolkitChoice", "choose_toolkit", "cuda_ways_out"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolkitChoice:
    """The host to plan the job's build with (its nvcc swapped for a fetched toolkit's, when
    one is used), the step that fetches that toolkit, and a note for a blocked CUDA job."""

    host: Host
    step: Step | None = None
    note: str | None = None  # why no toolkit fits, and where one would come from


def _same_minor(host: Host, job: BuildJob) -> bool:
    try:
        have = Version(host.cuda) if host.cuda else None
    except InvalidVersion:
        return False
    return have is not None and (have.major, have.minor) == (job.cuda.major, job.cuda.minor)


def _release(job: BuildJob) -> ToolkitRelease | None:
    """The PyPI wheel set of the job's CUDA release, else of the newest release of its minor."""
    rows = catalog()
    exact = rows.release(job.cuda)
    minor = [r for r in rows.releases if (r.cuda.major, r.cuda.minor) == job.cuda.release[:2]]
    return exact or (minor[-1] if minor else None)


def _fetch_step(release: ToolkitRelease, host: Host, root: str) -> Step:
    return Step(
        name="toolkit",
        description=f"CUDA {release.cuda} toolkit from NVIDIA's PyPI wheels (cached)",
        argv=(host.python_exe, "-m", "cuship", "toolkit", "install", str(release.cuda)),
        env={settings.TOOLKITS: root},
    )


def _note(job: BuildJob, build: BuildSection, release: ToolkitRelease | None) -> str:
    wanted = f"{job.cuda.major}.{job.cuda.minor}"
    gap = catalog().missing_major(job.cuda.major)
    if gap is not None:
        image = image_for(job, build.image)
        return f"PyPI has no CUDA {job.cuda.major} compiler; use {runner_hint(wanted, image)}"
    if release is not None and build.toolkits == "host":
        return f'[build] toolkits = "fetch" builds it with CUDA {release.cuda} from PyPI'
    return f"no CUDA {wanted} wheel set is known; use {runner_hint(wanted)}"


def choose_toolkit(job: BuildJob, build: BuildSection, host: Host) -> ToolkitChoice:
    """The toolkit ``job`` builds with on ``host``: the host's nvcc when its CUDA minor is the
    job's; else, with ``toolkits = "fetch"``, the job's release from the toolkit cache."""
    if job.cpu or (host.nvcc is not None and _same_minor(host, job)):
        return ToolkitChoice(host=host)
    release = _release(job)
    if build.toolkits == "fetch" and release is not None and host.toolkits_root is not None:
        prefix = toolkit_prefix(host.toolkits_root, release)
        swapped = dataclasses.replace(
            host, nvcc=str(prefix / "bin" / "nvcc"), cuda=str(release.nvcc), cuda_home=str(prefix)
        )
        return ToolkitChoice(host=swapped, step=_fetch_step(release, host, host.toolkits_root))
    return ToolkitChoice(host=host, note=_note(job, build, release))


CUDA_WAYS_OUT = (
    "the host's toolkit (leave [matrix] cuda out and the plan takes this host's nvcc's CUDA, "
    "or name it there)",
    "[build] toolkits = 'fetch' (cuship assembles a CUDA 13.x toolkit from PyPI)",
    "another runner with that CUDA (cuship matrix --format github) or --mode container",
    "device_code = false for a package with no CUDA device code (packages.yml: its entry's "
    "matrix: {device_code: false}): one +cpu wheel per Python",
)
"""The ways out of a job that cannot build for want of CUDA, in the order worth trying."""


def cuda_ways_out() -> str:
    """:data:`CUDA_WAYS_OUT` as one hint."""
    return "ways out: " + "; ".join(f"{i}. {way}" for i, way in enumerate(CUDA_WAYS_OUT, 1))
