"""Where each file of NVIDIA's toolkit wheels goes in a toolkit prefix, and which file of an
index is the one to fetch (pure: names in, names out).

The 13.x wheels install under ``nvidia/cu13/``: ``bin/`` (nvcc, cudafe++, ptxas, ...),
``nvvm/`` (cicc, libdevice), ``include/`` (headers, ``cccl/``), ``lib/`` (libcudart, libnvvm).
The prefix follows the runfile's layout, which CMake's FindCUDAToolkit and torch's
cpp_extension expect: ``lib64/`` holds the libraries (``lib`` links to it), every
``libX.so.N`` gets its ``libX.so`` development link, and ``targets/<triple>/{include,lib}``
point back at ``include/`` and ``lib64/``.
"""

from __future__ import annotations

import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Protocol, TypeVar

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import Version

from cuship import settings
from cuship.errors import InputError

__all__ = [
    "MANIFEST",
    "Link",
    "dev_links",
    "file_mode",
    "layout_links",
    "member_target",
    "pick_file",
    "target_triple",
]

MANIFEST = "cuship-toolkit.json"
"""The record cuship writes into every prefix it assembles (what came from where)."""

_TRIPLES = {"x86_64": "x86_64-linux", "aarch64": "sbsa-linux"}
_VERSIONED_LIB = re.compile(r"^(lib[^/]+\.so)\.\d+$")


@dataclass(frozen=True, slots=True, kw_only=True)
class Link:
    """A symbolic link to create: ``path`` (prefix-relative) pointing at ``to`` (as written)."""

    path: str
    to: str


def target_triple(machine: str) -> str:
    """The runfile's name for this machine's ``targets/`` directory."""
    try:
        return _TRIPLES[machine]
    except KeyError as err:
        raise InputError(
            f"no CUDA toolkit wheels for the machine {machine!r}",
            hint="NVIDIA publishes them for x86_64 and aarch64 (sbsa) Linux",
        ) from err


def member_target(member: str, major: int) -> str | None:
    """The prefix-relative path of wheel member ``member``, or None for what is left out
    (Python package scaffolding, NVIDIA's ``.metadata``). ``*.dist-info`` goes to
    ``dist-info/`` (licenses and RECORDs stay with the toolkit)."""
    if member.endswith("/"):
        return None
    parts = PurePosixPath(member).parts
    if member.startswith("/") or ".." in parts or "" in parts:
        raise InputError(
            f"refusing the wheel member {member!r}: it leaves the wheel",
            hint="the wheel is not one of NVIDIA's; check the index it came from",
        )
    if parts[0].endswith(".dist-info"):
        return "dist-info/" + member
    root = ("nvidia", f"cu{major}")
    if parts[:2] != root or len(parts) < 3 or parts[2] == ".metadata":
        return None
    rest = parts[2:]
    if rest[0] == "lib":
        rest = ("lib64", *rest[1:])
    return "/".join(rest)


def file_mode(external_attr: int) -> int:
    """Permissions for an extracted member: executable for all when its owner could run it."""
    mode = external_attr >> 16
    return 0o755 if mode & stat.S_IXUSR else 0o644


def dev_links(files: Iterable[str]) -> tuple[Link, ...]:
    """``lib64/libX.so -> libX.so.N`` for every versioned library without its unversioned name."""
    present = set(files)
    links = []
    for path in sorted(present):
        folder, _, name = path.rpartition("/")
        match = _VERSIONED_LIB.match(name)
        if folder == "lib64" and match and f"lib64/{match[1]}" not in present:
            links.append(Link(path=f"lib64/{match[1]}", to=name))
    return tuple(links)


def layout_links(files: Iterable[str], machine: str) -> tuple[Link, ...]:
    """Every link the prefix needs besides the extracted files."""
    triple = f"targets/{target_triple(machine)}"
    return (
        Link(path="lib", to="lib64"),
        Link(path=f"{triple}/include", to="../../include"),
        Link(path=f"{triple}/lib", to="../../lib64"),
        *dev_links(files),
    )


class IndexFile(Protocol):
    """What :func:`pick_file` needs of an index entry (``resolve.Candidate`` has it)."""

    @property
    def filename(self) -> str: ...


F = TypeVar("F", bound=IndexFile)


def _platform_ok(platform: str, machine: str) -> bool:
    return platform.startswith("manylinux") and platform.endswith(f"_{machine}")


def _fits(filename: str, package: str, version: Version, machine: str) -> bool:
    try:
        name, found, _build, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        return False
    platforms = {tag.platform for tag in tags}
    return (
        name == canonicalize_name(package)
        and found == version
        and any(_platform_ok(p, machine) for p in platforms)
    )


def pick_file(files: Sequence[F], package: str, version: Version, machine: str) -> F:
    """The wheel of ``package==version`` for Linux on ``machine`` among an index's files."""
    fitting = [f for f in files if f.filename.endswith(".whl")]
    fitting = [f for f in fitting if _fits(f.filename, package, version, machine)]
    if not fitting:
        listed = sorted({f.filename for f in files if str(version) in f.filename})[:4]
        raise InputError(
            f"the index lists no Linux {machine} wheel of {package}=={version}",
            hint=(f"it lists {', '.join(listed)}" if listed else "it lists no such version")
            + f"; point {settings.TOOLKIT_INDEX} at an index that mirrors NVIDIA's wheels",
        )
    return fitting[0]
