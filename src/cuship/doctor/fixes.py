"""The command line (or the one step) that fixes each kind of problem (pure).

Where the distribution says which index it came from (``cuship.json``), the fix is ``cuship
install`` from that index: the resolver picks the file for this machine's GPUs, driver and torch.
Otherwise it is the exact pip line, with ``URL`` standing for an index that has the build named.
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from cuship.doctor.model import InstalledPackage, Machine

__all__ = [
    "driver_upgrade",
    "reinstall",
    "reinstall_fitting",
    "reinstall_same",
    "torch_fix",
    "torch_install",
]

PYTORCH_INDEX = "https://download.pytorch.org/whl/{variant}"


def _public(version: str) -> str:
    try:
        return Version(version).public
    except InvalidVersion:
        return version


def _from_index(package: InstalledPackage) -> str | None:
    index = package.provenance.index
    return f"cuship install {package.name} --index {index}" if index else None


def reinstall(package: InstalledPackage, build: str) -> str:
    """Install another build of the same release: ``build`` says which (``with SASS for sm_120``)."""
    return _from_index(package) or (
        f'pip install --force-reinstall --no-deps "{package.name}=={_public(package.version)}" '
        f"--index-url URL  (URL: an index with a build {build})"
    )


def reinstall_same(package: InstalledPackage) -> str:
    """Install the same files again (a shared object is missing or damaged)."""
    return _from_index(package) or (
        f'pip install --force-reinstall --no-deps "{package.name}=={package.version}"'
    )


def reinstall_fitting(package: InstalledPackage) -> str:
    """Let pip choose again among the release's files by this system's tags."""
    return _from_index(package) or (
        f'pip install --force-reinstall --no-deps "{package.name}=={_public(package.version)}"'
        "  (pip takes a file whose tags fit this system, or builds it here)"
    )


def torch_fix(package: InstalledPackage, requirement: str, machine: Machine) -> str:
    """The package's own index offers a build for the installed torch; else install the torch
    it was built for."""
    return _from_index(package) or torch_install(requirement, machine)


def torch_install(requirement: str, machine: Machine) -> str:
    """``pip install "torch==2.8.*"``, from the PyTorch index of the installed torch's variant
    (``+cpu``, ``+cu128``) so that the CUDA build does not change under the user's feet."""
    line = f'pip install "{requirement}"'
    local = None
    if machine.torch is not None:
        try:
            local = Version(machine.torch).local
        except InvalidVersion:
            local = None
    if local and (local == "cpu" or local.startswith(("cu", "rocm"))):
        line += " --index-url " + PYTORCH_INDEX.format(variant=local)
    return line


def driver_upgrade(minimum: str | None, cuda_major: int) -> str:
    """Upgrade the driver to one that runs CUDA ``cuda_major``."""
    if minimum is None:
        return f"upgrade the NVIDIA driver to one that runs CUDA {cuda_major}"
    return f"upgrade the NVIDIA driver to {minimum} or newer (runs CUDA {cuda_major}.x)"
