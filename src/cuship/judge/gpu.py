"""Can a wheel's device code run on a GPU, and can the driver run the wheel's CUDA? (pure)

SASS (``sm_XY`` cubins) is binary-compatible within a major: ``sm_80`` runs on 8.0, 8.6 and
8.9, never on 9.0. Arch-specific SASS (``sm_90a``) runs on exactly that compute capability.
Family-specific SASS (``sm_100f``, CUDA 12.9+) runs on the devices of its family with the same
or a higher minor (``sm_100f`` on 10.0 and 10.3; ``sm_103f`` only on 10.3): for the purpose of
choosing a wheel this is the same rule as plain SASS. PTX (``compute_XY``) is compiled by the
driver at first launch for any GPU of compute capability X.Y or higher (``a``/``f`` PTX keeps
its suffix's rule).

CUDA: NVIDIA's minor-version compatibility lets a driver of a major's family run code built
with any toolkit of that major (a cu12.9 wheel runs on a 12.4 driver, >= 525.60.13), which is
what wheels carrying SASS for the GPU need. JIT-compiling PTX is not covered by it: a wheel
that relies on PTX for some GPU needs a driver that supports the wheel's own CUDA minor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from packaging.version import Version

from cuship.arch import cc_tuple, sm_parts
from cuship.compat import Compat
from cuship.errors import UsageError

__all__ = ["Coverage", "covers", "driver_runs", "gpu_coverage"]

Coverage = Literal["sass", "ptx"]


def covers(sm: str, cc: tuple[int, int], *, ptx: bool) -> bool:
    """True if code for ``sm`` (SASS, or PTX with ``ptx=True``) runs on compute capability ``cc``."""
    parts = sm_parts(sm)
    if parts is None:
        return False
    major, minor, suffix = parts
    if suffix == "a":
        return (major, minor) == cc
    if suffix == "f" or not ptx:
        return major == cc[0] and minor <= cc[1]
    return (major, minor) <= cc


def gpu_coverage(
    cc: str, sass: Sequence[str], ptx: Sequence[str]
) -> tuple[Coverage | None, str | None]:
    """How a GPU of compute capability ``cc`` runs a wheel: ("sass"|"ptx"|None, the arch used)."""
    want = cc_tuple(cc)
    for sm in sass:
        if covers(sm, want, ptx=False):
            return "sass", sm
    for sm in ptx:
        if covers(sm, want, ptx=True):
            return "ptx", sm
    return None, None


def driver_runs(
    cuda: Version,
    *,
    driver_version: str | None,
    driver_cuda: str | None,
    jit: bool,
    compat: Compat,
) -> bool | None:
    """Can this driver run code built with CUDA ``cuda``? None when nothing is known of the driver.

    ``jit`` (the wheel needs PTX compiled by the driver) asks for the toolkit's own driver
    minimum; otherwise minor-version compatibility within the major applies.
    """
    wanted = f"{cuda.major}.{cuda.minor}"
    if driver_version is not None:
        try:
            return compat.driver_supports(driver_version, wanted, minor_compat=not jit)
        except UsageError:
            pass  # a toolkit or driver the data does not know: fall back to the CUDA version
    if driver_cuda is None:
        return None
    have = Version(driver_cuda)
    if jit:
        return (cuda.major, cuda.minor) <= (have.major, have.minor)
    return cuda.major <= have.major
