"""The command line (or the one step) that fixes each kind of problem (pure).

Where the package says which index it came from (the ``cuship.json`` the backend writes), the fix
for a build that does not fit is ``cuship install`` from that index: the resolver picks the file
for this machine's GPUs, driver and torch. Otherwise it is the exact pip line, with ``URL``
standing for an index that has the build named. torch is always fixed from the PyTorch index of
the build that fits (``…/whl/cu130``, ``…/whl/cpu``), never from PyPI, whose one build per
release may be the wrong one.
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from cuship.compat import Compat
from cuship.errors import CushipError
from cuship.judge.needs import WheelNeeds
from cuship.judge.offer import Offer, TorchBuild
from cuship.wheel.cudalibs import toolkit_libraries, wheel_for

__all__ = [
    "PYTORCH_INDEX",
    "driver_upgrade",
    "library_install",
    "reinstall",
    "reinstall_fitting",
    "reinstall_same",
    "torch_fix",
    "torch_for_cuda",
    "torch_install",
    "torch_variant",
]

PYTORCH_INDEX = "https://download.pytorch.org/whl/{variant}"


def _public(version: str) -> str:
    try:
        return Version(version).public
    except InvalidVersion:
        return version


def _from_index(needs: WheelNeeds) -> str | None:
    return f"cuship install {needs.name} --index {needs.index}" if needs.index else None


def reinstall(needs: WheelNeeds, build: str) -> str:
    """Install another build of the same release: ``build`` says which (``with SASS for sm_120``)."""
    return _from_index(needs) or (
        f'pip install --force-reinstall --no-deps "{needs.name}=={_public(needs.version)}" '
        f"--index-url URL  (URL: an index with a build {build})"
    )


def reinstall_same(needs: WheelNeeds) -> str:
    """Install the same files again (a shared object is missing or damaged)."""
    return _from_index(needs) or (
        f'pip install --force-reinstall --no-deps "{needs.name}=={needs.version}"'
    )


def reinstall_fitting(needs: WheelNeeds) -> str:
    """Let pip choose again among the release's files by this system's tags."""
    return _from_index(needs) or (
        f'pip install --force-reinstall --no-deps "{needs.name}=={_public(needs.version)}"'
        "  (pip takes a file whose tags fit this system, or builds it here)"
    )


def _variant_of(torch: TorchBuild | None) -> str | None:
    if torch is None:
        return None
    if torch.flavour == "cpu":
        return "cpu"
    if torch.flavour == "cuda" and torch.cuda:
        return "cu" + torch.cuda.replace(".", "")
    return None


def torch_install(requirement: str, torch: TorchBuild | None, variant: str | None = None) -> str:
    """``pip install "torch==2.8.*" --index-url …/whl/cu128``: from the PyTorch index of
    ``variant``, by default the installed torch's own build, so that the build does not change
    under the user's feet."""
    line = (
        f'pip install --force-reinstall "{requirement}"'
        if variant
        else f'pip install "{requirement}"'
    )
    chosen = variant or _variant_of(torch)
    if chosen:
        line += " --index-url " + PYTORCH_INDEX.format(variant=chosen)
    return line


def torch_fix(needs: WheelNeeds, requirement: str, torch: TorchBuild | None) -> str:
    """The package's own index offers a build for the installed torch; else a build of the
    package for the installed torch when that torch is the newer (no torch downgrade first),
    else install the torch it was built for, of the installed torch's build."""
    index = _from_index(needs)
    if index is not None:
        return index
    line = torch_install(requirement, torch)
    if torch is not None and _newer_than(torch.version, requirement):
        return (
            reinstall(needs, f"built for torch {_public(torch.version)}")
            + f", or (a downgrade) {line}"
        )
    return line


def _newer_than(version: str, requirement: str) -> bool:
    """Whether ``version`` is above every release ``requirement`` (``torch==2.8.*``) admits."""
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        wanted = Requirement(requirement)
        have = Version(version)
    except (InvalidRequirement, InvalidVersion):
        return False
    pins = [Version(s.version.rstrip(".*")) for s in wanted.specifier if s.operator == "=="]
    return (
        bool(pins)
        and all(Version(have.public) > pin for pin in pins)
        and not any(have.release[:2] == pin.release[:2] for pin in pins)
    )


def torch_variant(
    compat: Compat,
    minor: str | None,
    cuda_major: int,
    offer: Offer,
    built_with: str | None = None,
) -> str | None:
    """The PyTorch index label (``cu130``) of the build of torch ``minor`` for CUDA
    ``cuda_major`` that the wheel was built and smoke-tested against: with ``built_with`` (the
    CUDA its label names, ``13.0``) the newest build not newer than it, as cuship's matrix picks
    a job's torch; else the newest this driver runs. None when that release has no such build."""
    if minor is None:
        return None
    try:
        release = compat.torch_release(minor)
    except CushipError:
        return None
    builds = [c for c in release.cuda if c.split(".", 1)[0] == str(cuda_major)]
    if offer.driver_cuda:  # never an index whose build the driver cannot run
        builds = [
            c for c in builds if Version(c).release[:2] <= Version(offer.driver_cuda).release[:2]
        ]
    built = _not_newer(builds, built_with) or builds
    return "cu" + built[-1].replace(".", "") if built else None


def _not_newer(builds: list[str], built_with: str | None) -> list[str]:
    """The ``builds`` (``["13.0", "13.2"]``) not newer than ``built_with`` (its major.minor)."""
    if not built_with:
        return []
    try:
        limit = Version(built_with).release[:2]
    except InvalidVersion:
        return []
    return [c for c in builds if Version(c).release[:2] <= limit]


def torch_for_cuda(
    compat: Compat, needs: WheelNeeds, offer: Offer, cuda_major: int, minor: str | None
) -> str:
    """Install torch ``minor`` built for CUDA ``cuda_major`` (the build of the CUDA the wheel's
    label names, when it has one), or, when that release has no such build, another build of
    the package."""
    variant = torch_variant(compat, minor, cuda_major, offer, needs.label_cuda)
    if variant is not None:
        return torch_install(f"torch=={minor}.*", None, variant)
    if offer.driver_cuda and torch_variant(compat, minor, cuda_major, Offer()) is not None:
        return (
            f"upgrade the NVIDIA driver: this one runs CUDA {offer.driver_cuda} at most, older "
            f"than every CUDA {cuda_major} build of torch {minor}; or "
            + reinstall(needs, "for the installed torch's build")
        )
    return reinstall(needs, "for the installed torch's build")


def library_install(soname: str, cuda_major: int | None) -> str:
    """The wheel that installs ``soname`` for the CUDA major of the object that needs it
    (``pip install nvidia-cudnn-cu13`` for a CUDA 13 object), else the toolkit of its CUDA
    major."""
    wheel = wheel_for(soname, cuda_major)
    if wheel is not None:
        return f'pip install "{wheel}"'
    if cuda_major is not None and toolkit_libraries(cuda_major):
        return f"install the CUDA {cuda_major} toolkit (its lib64 on the library path)"
    return f"install the library that provides {soname} (or put its directory on LD_LIBRARY_PATH)"


def driver_upgrade(minimum: str | None, cuda_major: int) -> str:
    """Upgrade the driver to one that runs CUDA ``cuda_major``."""
    if minimum is None:
        return f"upgrade the NVIDIA driver to one that runs CUDA {cuda_major}"
    return f"upgrade the NVIDIA driver to {minimum} or newer (runs CUDA {cuda_major}.x)"
