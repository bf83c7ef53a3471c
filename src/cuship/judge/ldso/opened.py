"""The NVIDIA libraries an object opens itself (``dlopen``), looked for as its call would look:
already loaded, its DT_RPATH chain (without DT_RUNPATH), LD_LIBRARY_PATH, its DT_RUNPATH, the
cache, the default directories (man 3 dlopen), then, for a package that uses cuda-pathfinder,
NVIDIA's wheels in the site directories.

Names come from the object's strings (:mod:`cuship.wheel.read.runtime`); the names of one
library (``libcudart.so.12``, ``libcudart.so.13``, ``libcudart.so``) are alternatives, the
first found serves. An object that builds the names at run time (XLA) leaves none: when its
DT_RPATH/DT_RUNPATH points into NVIDIA's wheels (``$ORIGIN/../nvidia/cu13/lib``), those
directories are where its libraries come from; none of them there, and no library of that CUDA
major elsewhere, its CUDA libraries are missing; some there, which ones it opens is not known,
and said so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from cuship.judge.ldso.process import Node, Process, expand
from cuship.judge.needs import ObjectNeeds
from cuship.machine.loader import LoaderView
from cuship.wheel.cudalibs import cuda_major_of, is_nvidia_lib, library_stem, toolkit_libraries

__all__ = ["opened", "run_time_dirs"]

_WHEEL_DIR = re.compile(r"(^|/)nvidia/")
_MAJOR = re.compile(r"nvidia/cu(\d{2})(?:/|$)")


def opened(
    process: Process,
    root: Node,
    obj: ObjectNeeds,
    extra: Sequence[str],
    major: int | None = None,
) -> tuple[tuple[str, str | None], ...]:
    """Each NVIDIA library ``obj`` opens by name, and where it is found (None: nowhere);
    with, for an object opening libraries from NVIDIA wheel directories none of which is
    there, one entry for those libraries. ``major``: the CUDA the object needs, for wheel
    directories that do not name it (``nvidia/cublas/lib``)."""
    groups: dict[str, list[str]] = {}
    for name in obj.opens or ():
        if is_nvidia_lib(name):
            groups.setdefault(library_stem(name), []).append(name)
    found: list[tuple[str, str | None]] = []
    for names in groups.values():
        ordered = sorted(names, key=lambda n: (n.endswith(".so"), n))  # versioned names first
        where = None
        for name in ordered:
            node = process.find(name, root, extra=extra)
            if node is not None:
                where = f"{node.path} ({node.how})" if node.path else node.how
                break
        found.append((" or ".join(ordered), where))
    absent = _absent_wheel_dirs(process, root, obj, major)
    if absent is not None:
        found.append((absent, None))
    return tuple(found)


def _wheel_dirs(obj: ObjectNeeds, root: Node, view: LoaderView) -> list[tuple[str, str]]:
    """(entry, directory) for the NVIDIA wheel directories its search paths name, when it
    opens libraries itself and carries CUDA code."""
    if obj.opens is None or not (obj.device or obj.static_runtime):
        return []
    found = []
    for entry in (*obj.runpath, *obj.rpath):
        if _WHEEL_DIR.search(entry):
            directory = expand(entry, root.origin, view)
            if directory is not None:
                found.append((entry, directory))
    return found


def _absent_wheel_dirs(
    process: Process, root: Node, obj: ObjectNeeds, needed: int | None
) -> str | None:
    """With none of its NVIDIA wheel directories there, the libraries are looked for by the
    system's search (the names XLA builds: libcublas.so.<major>), else said missing."""
    dirs = _wheel_dirs(obj, root, process.view)
    if not dirs or any(process.view.files.listdir(d) for _, d in dirs):
        return None
    named = next((int(m[1]) for entry, _ in dirs if (m := _MAJOR.search(entry))), None)
    major = named if named is not None else needed
    if major is not None:  # only libraries whose SONAME names the major (not libcurand.so.10)
        for lib in toolkit_libraries(major):
            if cuda_major_of(lib.soname) == major and process.find(lib.soname, root) is not None:
                return None  # the system has that CUDA's libraries: it finds them there
    entries = list(dict.fromkeys(entry for entry, _ in dirs))
    what = f"CUDA {major}'s libraries" if major else "its CUDA libraries"
    return f"{what} (looked for in {entries[0]}{' and more' if len(entries) > 1 else ''})"


def run_time_dirs(obj: ObjectNeeds, view: LoaderView, local: Sequence[Node]) -> list[str]:
    """What cannot be decided of the libraries ``obj`` opens from NVIDIA wheel directories
    that are there: their names are built at run time."""
    if not local:
        return []
    dirs = _wheel_dirs(obj, local[0], view)
    present = [entry for entry, d in dirs if view.files.listdir(d)]
    named = [n for n in obj.opens or () if is_nvidia_lib(n) and not n.startswith("libcuda.")]
    if not present or named:
        return []
    return [
        f"{obj.path} opens its CUDA libraries at run time from {present[0]} by names it builds "
        "then (none is written in it): which of them it needs was not checked"
    ]
