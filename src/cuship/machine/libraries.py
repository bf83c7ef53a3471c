"""The NVIDIA libraries this machine offers a shared object that needs them, and where each is.

Three places hold them: the NVIDIA wheels installed beside the packages (``nvidia/*/lib``: the
``nvidia-cuda-runtime-cu12`` wheel's ``nvidia/cuda_runtime/lib/libcudart.so.12``, CUDA 13's
``nvidia/cu13/lib/libcudart.so.13``), torch's own ``torch/lib``, and the system's library path
(``LD_LIBRARY_PATH``, the directories ``/etc/ld.so.conf`` names, the loader's defaults). Only
files are listed, never loaded; only NVIDIA's libraries are kept (:func:`is_nvidia_lib`).

``CUSHIP_CUDA_LIBS`` replaces the search for tests and faked machines: ``none`` (no NVIDIA
library anywhere), CUDA majors (``12,13``: every library cuship knows of those toolkits), or
SONAMEs (``libcudart.so.12``), mixed freely.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence

from cuship import settings
from cuship._record import frozen
from cuship.errors import UsageError
from cuship.machine.probe import Probe
from cuship.wheel.cudalibs import is_nvidia_lib, toolkit_libraries

__all__ = ["CudaLibraries", "cuda_libraries", "parse_override"]

# The loader's own directories on glibc systems, searched after ld.so.conf's.
_DEFAULT_DIRS = ("/lib64", "/usr/lib64", "/lib", "/usr/lib")
_MAX_CONF_FILES = 64  # include globs of ld.so.conf followed, at most


@frozen
class CudaLibraries:
    """NVIDIA libraries found, by file name (a SONAME, usually), each with where it is."""

    found: tuple[tuple[str, str], ...] = ()
    source: str = "searched"  # "searched" or "CUSHIP_CUDA_LIBS"

    def where(self, soname: str) -> str | None:
        """Where ``soname`` is, or None when it is nowhere here."""
        return next((place for name, place in self.found if name == soname), None)

    def to_json(self) -> dict[str, object]:
        return {"source": self.source, "found": {name: place for name, place in self.found}}


def parse_override(text: str, var: str = settings.CUDA_LIBS) -> CudaLibraries:
    """``CUSHIP_CUDA_LIBS``: ``none``, CUDA majors and SONAMEs, comma separated."""
    found: dict[str, str] = {}
    for token in (t.strip() for t in text.split(",")):
        if not token or token.lower() == "none":
            continue
        if token.isdigit():
            libraries = toolkit_libraries(int(token))
            if not libraries:
                raise UsageError(
                    f"{var}: cuship knows no library of CUDA {token}",
                    hint="name CUDA 11, 12 or 13, or the SONAMEs (libcudart.so.12)",
                )
            for lib in libraries:
                found.setdefault(lib.soname, f"{var} (CUDA {token})")
        elif ".so" in token and "/" not in token:
            found.setdefault(token, var)
        else:
            raise UsageError(
                f"{var}: {token!r} is neither a CUDA major nor a library's SONAME",
                hint="e.g. CUSHIP_CUDA_LIBS=13 or CUSHIP_CUDA_LIBS=libcudart.so.12 (none: no library)",
            )
    return CudaLibraries(found=tuple(sorted(found.items())), source=var)


def cuda_libraries(env: Mapping[str, str], probe: Probe, site_dirs: Sequence[str]) -> CudaLibraries:
    """The NVIDIA libraries in ``site_dirs`` (NVIDIA's wheels, torch) and on the system's
    library path, or what ``CUSHIP_CUDA_LIBS`` says."""
    override = env.get(settings.CUDA_LIBS)
    if override is not None:
        return parse_override(override)
    found: dict[str, str] = {}
    for directory, place in _wheel_dirs(probe, site_dirs):
        _add(found, probe, directory, place)
    for directory in _system_dirs(env, probe):
        _add(found, probe, directory, f"system ({directory})")
    return CudaLibraries(found=tuple(sorted(found.items())))


# Every NVIDIA library's name starts so (a cheap test before the patterns, over directories of
# thousands of system libraries).
_PREFIXES = ("libcu", "libnv", "libnpp", "libnccl")


def _add(found: dict[str, str], probe: Probe, directory: str, place: str) -> None:
    for name in probe.listdir(directory):
        if name.startswith(_PREFIXES) and ".so" in name and is_nvidia_lib(name):
            found.setdefault(name, place)


def _wheel_dirs(probe: Probe, site_dirs: Sequence[str]) -> Iterable[tuple[str, str]]:
    """``(directory, place)`` for each ``nvidia/*/lib`` and ``torch/lib`` in the site dirs."""
    for site in dict.fromkeys(site_dirs):
        top = probe.listdir(site)
        if "nvidia" in top:
            for package in probe.listdir(f"{site}/nvidia"):
                yield f"{site}/nvidia/{package}/lib", f"the nvidia/{package} wheel ({site})"
        if "torch" in top:
            yield f"{site}/torch/lib", f"torch/lib ({site})"


def _system_dirs(env: Mapping[str, str], probe: Probe) -> list[str]:
    dirs = [d for d in env.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]
    dirs += _conf_dirs(probe, "/etc/ld.so.conf", budget=[_MAX_CONF_FILES])
    dirs += _DEFAULT_DIRS
    # every one, as the loader searches every one: cutting the list at a count changed the
    # verdict (a library in the 257th directory was "missing"). Its length is the kernel's to
    # bound (an environment string is at most 128 KiB: some 64,000 directories), and each is
    # listed once.
    return list(dict.fromkeys(dirs))


def _conf_dirs(probe: Probe, path: str, budget: list[int]) -> list[str]:
    """The directories an ``ld.so.conf`` names, following its ``include`` lines (globs of
    ``*.conf`` in one directory) up to a budget of files."""
    budget[0] -= 1
    if budget[0] < 0:
        return []
    dirs: list[str] = []
    for raw in (probe.read(path) or "").splitlines():
        line = raw.split("#", 1)[0].strip()
        if line.startswith("include "):
            dirs += _included(probe, line.split(None, 1)[1].strip(), path, budget)
        elif line.startswith("/"):
            dirs.append(line)
    return dirs


def _included(probe: Probe, pattern: str, conf: str, budget: list[int]) -> list[str]:
    from fnmatch import fnmatchcase

    if not pattern.startswith("/"):
        pattern = f"{conf.rpartition('/')[0]}/{pattern}"
    folder, _, glob = pattern.rpartition("/")
    dirs: list[str] = []
    for name in probe.listdir(folder):
        if fnmatchcase(name, glob):
            dirs += _conf_dirs(probe, f"{folder}/{name}", budget)
    return dirs
