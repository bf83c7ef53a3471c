"""Which NVIDIA wheels make which CUDA toolkit (``data/toolkits.toml``), and the majors PyPI
cannot supply; pure lookups over the rows, with errors that say what to do instead."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import Version

from cuship import schema
from cuship.compat import Compat, load
from cuship.errors import ToolMissing, UsageError
from cuship.schema import Place, field_doc

__all__ = [
    "DATA_FILE",
    "Catalog",
    "ToolkitRelease",
    "ToolkitsFile",
    "Unavailable",
    "WheelComponent",
    "catalog",
    "read_catalog",
]

DATA_FILE = Path(__file__).parent.parent / "data" / "toolkits.toml"


@dataclass(frozen=True, slots=True, kw_only=True)
class WheelComponent:
    """One wheel package and the files it puts into the toolkit prefix."""

    package: str = field_doc('The PyPI project, e.g. "nvidia-cuda-nvcc".')
    provides: tuple[str, ...] = field_doc(
        'Prefix-relative files that must exist once assembled: "bin/nvcc".', non_empty=True
    )
    source: str = field_doc("https URL of the project's page.")


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolkitRelease:
    """One CUDA release and the exact wheel versions that make its toolkit."""

    cuda: Version = field_doc("The CUDA release, a row of cuda.toml, e.g. 13.0.2.")
    wheels: Mapping[str, Version] = field_doc(
        "Each component package and its exact version: nvidia-cuda-nvcc = 13.0.88."
    )
    source: str = field_doc("https URL of the release notes the versions come from.")
    note: str = field_doc("Free text for people.", default="")

    @property
    def major_minor(self) -> str:
        return f"{self.cuda.major}.{self.cuda.minor}"

    @property
    def nvcc(self) -> Version:
        """The nvcc version (what ``nvcc --version`` reports after ``V``)."""
        return self.wheels["nvidia-cuda-nvcc"]

    def pins(self) -> tuple[str, ...]:
        """``("nvidia-cuda-nvcc==13.0.88", ...)``."""
        return tuple(f"{name}=={version}" for name, version in self.wheels.items())

    def to_json(self) -> dict[str, object]:
        return {
            "cuda": str(self.cuda),
            "nvcc": str(self.nvcc),
            "wheels": {name: str(v) for name, v in self.wheels.items()},
            "source": self.source,
            "note": self.note,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Unavailable:
    """A CUDA major whose PyPI wheels hold no complete compiler."""

    major: int = field_doc("The CUDA major, e.g. 12.")
    reason: str = field_doc("What its wheels hold, and what they lack.")
    source: str = field_doc("https URL of the wheel's project page.")

    def to_json(self) -> dict[str, object]:
        return {"major": self.major, "reason": self.reason, "source": self.source}


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolkitsFile:
    """toolkits.toml: the CUDA toolkits cuship assembles from NVIDIA's PyPI wheels."""

    component: tuple[WheelComponent, ...] = field_doc(
        "One table per wheel package a toolkit is made of.", non_empty=True
    )
    toolkit: tuple[ToolkitRelease, ...] = field_doc(
        "One table per CUDA release, sorted by version.", non_empty=True
    )
    unavailable: tuple[Unavailable, ...] = field_doc(
        "CUDA majors PyPI cannot supply a compiler for.", default=()
    )


def runner_hint(cuda: str, image: str | None = None) -> str:
    """Where a toolkit PyPI cannot supply comes from instead."""
    where = f"a runner with the CUDA {cuda} toolkit installed"
    return where + (f", or the container image {image} with --mode container" if image else "")


@dataclass(frozen=True, slots=True, kw_only=True)
class Catalog:
    """The rows of toolkits.toml with the questions cuship asks of them."""

    components: tuple[WheelComponent, ...]
    releases: tuple[ToolkitRelease, ...]
    unavailable: tuple[Unavailable, ...]

    def release(self, cuda: Version) -> ToolkitRelease | None:
        """The row of exactly this CUDA release, if PyPI can supply it."""
        return next((r for r in self.releases if r.cuda == cuda), None)

    def missing_major(self, major: int) -> Unavailable | None:
        """Why PyPI cannot supply a toolkit of this CUDA major, or None when it can."""
        return next((u for u in self.unavailable if u.major == major), None)

    def find(self, spec: str, compat: Compat | None = None) -> ToolkitRelease:
        """The release ``spec`` names: ``"13.0.2"`` exactly, ``"13.0"``/``"cu130"`` the newest
        13.0.x, ``"13"`` the newest 13.x. A major PyPI cannot supply is :class:`ToolMissing`;
        a version cuship does not know is a :class:`UsageError`."""
        known = (compat or load()).cuda(spec)
        gap = self.missing_major(known.version.major)
        if gap is not None:
            raise ToolMissing(
                f"CUDA {spec!r} cannot come from PyPI: {gap.reason}",
                hint=f"build its jobs on {runner_hint(known.major_minor)} "
                f"(e.g. nvidia/cuda:{known.version}-devel-ubuntu22.04 with --mode container)",
            )
        found = self.release(known.version)
        if found is None:
            installable = ", ".join(str(r.cuda) for r in self.releases)
            raise UsageError(
                f"no wheel set is recorded for CUDA {known.version}",
                hint=f"installable: {installable} (`cuship toolkit list`)",
            )
        return found


def _check_release(row: Place, release: ToolkitRelease, packages: set[str]) -> None:
    names = {canonicalize_name(n) for n in release.wheels}
    if names != set(release.wheels):
        raise row.fail("wheels", "write package names normalised (nvidia-cuda-nvcc)")
    if names != packages:
        extra, lacking = sorted(names - packages), sorted(packages - names)
        problem = f"unknown {extra[0]!r}" if extra else f"lacks {lacking[0]!r}"
        raise row.fail("wheels", problem, hint="name one version of every [[component]]")
    if not release.source.startswith("https://"):
        raise row.fail("source", f"{release.source!r} is not an https URL")


def check_catalog(place: Place, file: ToolkitsFile, compat: Compat) -> None:
    """Rows ascending and unique, each naming every component once, each a release of
    cuda.toml, and every cuda.toml release either installable here or of an unavailable major."""
    packages = {c.package for c in file.component}
    releases = place.at("toolkit").each(file.toolkit)
    for (_, before), (row, after) in itertools.pairwise(releases):
        if after.cuda <= before.cuda:
            raise row.fail("cuda", f"{str(after.cuda)!r} is not after {str(before.cuda)!r}")
    known = {t.version for t in compat.toolkits}
    gaps = {u.major for u in file.unavailable}
    for row, release in releases:
        _check_release(row, release, packages)
        if release.cuda not in known:
            raise row.fail("cuda", f"{str(release.cuda)!r} is not a release in cuda.toml")
        if release.cuda.major in gaps:
            raise row.fail("cuda", f"major {release.cuda.major} is listed as unavailable")
    listed = {r.cuda for r in file.toolkit}
    for toolkit in compat.toolkits:
        if toolkit.version.major not in gaps and toolkit.version not in listed:
            raise place.fail(
                "toolkit",
                f"cuda.toml knows CUDA {toolkit.version} but no wheel set is recorded for it",
                hint="add a [[toolkit]] row with its wheels, or an [[unavailable]] major",
            )


def read_catalog(path: Path = DATA_FILE, compat: Compat | None = None) -> Catalog:
    """Load and check ``path`` (default: the shipped toolkits.toml)."""
    place = Place(str(path))
    file = schema.load(ToolkitsFile, schema.read_toml(path), source=place.source, strict=True)
    check_catalog(place, file, compat or load())
    return Catalog(components=file.component, releases=file.toolkit, unavailable=file.unavailable)


@functools.cache
def catalog() -> Catalog:
    """The shipped catalog, read once per process."""
    return read_catalog()
