"""The one judge: does this wheel (or installed distribution) run on this machine, and why not.

resolve, install, the PEP 517 backend, gpu-run, doctor and verify all ask it, so the same wheel
on the same machine gets the same verdict everywhere. It decides from facts only, read from
files and never by importing anything:

- :class:`WheelNeeds` (:mod:`cuship.judge.needs`): what each shared object needs: the device
  code the CUDA runtime loads, the NVIDIA libraries it links by SONAME, torch's libraries and
  ABI; which objects are the package's own and which are NVIDIA libraries it bundles; the
  wheel's NVIDIA requirements, torch pin and label;
- :class:`Offer` (:mod:`cuship.judge.offer`): the machine's GPUs, driver, torch (version,
  C++ ABI, build flavour from ``torch/version.py``), the NVIDIA libraries present, glibc, and
  its dynamic loader (:class:`~cuship.machine.loader.LoaderView`).

Installed objects are loaded as ``dlopen(RTLD_NOW)`` would load them there
(:mod:`cuship.judge.ldso`: each library found by ld.so's rules, every symbol bound); the CUDA
each object needs is read from the object itself (:mod:`cuship.judge.release`); one rule says
which objects are main and which optional (:mod:`cuship.judge.roles`).

:func:`judge` runs the checks of :mod:`cuship.judge.checks` and returns a :class:`Judgement`:
each check passes, fails (with the error a user would meet and the command that fixes it),
fits partly (an arch-specific object with no code for this GPU), or could not run (said, never
counted as passing).
"""

from __future__ import annotations

from collections.abc import Callable

from cuship.compat import Compat, load
from cuship.judge import checks, libraries, release
from cuship.judge.ldso import loads
from cuship.judge.model import (
    Area,
    Check,
    Coverage,
    GlibcVerdict,
    GpuRun,
    Judgement,
    LibraryNeed,
    ObjectLoad,
    Runs,
    Status,
    TorchVerdict,
)
from cuship.judge.needs import ObjectNeeds, Role, WheelNeeds, object_needs, role_of, wheel_needs
from cuship.judge.offer import Offer, TorchBuild, offer_of
from cuship.judge.state import Context, Judging
from cuship.judge.torch import judge_torch

__all__ = [
    "Area",
    "Check",
    "Context",
    "Coverage",
    "GlibcVerdict",
    "GpuRun",
    "Judgement",
    "LibraryNeed",
    "ObjectLoad",
    "ObjectNeeds",
    "Offer",
    "Role",
    "Runs",
    "Status",
    "TorchBuild",
    "TorchVerdict",
    "WheelNeeds",
    "judge",
    "object_needs",
    "offer_of",
    "role_of",
    "wheel_needs",
]


_CHECKS: tuple[Callable[[Judging], None], ...] = (
    checks.torch_to_come,
    checks.files,
    checks.alternatives,
    checks.gpu,
    release.cuda,
    release.jit_driver,
    loads,
    libraries.libraries_check,
    judge_torch,
    checks.glibc_check,
)


def judge(
    needs: WheelNeeds,
    offer: Offer,
    *,
    compat: Compat | None = None,
    context: Context | None = None,
) -> Judgement:
    """Every check of ``needs`` on ``offer``, in order: files, the CUDA alternative that loads,
    GPUs, the driver (the CUDA its objects need, the PTX it must JIT), loading each installed
    object as ld.so would, the NVIDIA libraries, torch, glibc. ``context``: as installed (the
    default), or before an install."""
    j = Judging(needs=needs, offer=offer, compat=compat or load(), context=context or Context())
    for check in _CHECKS:
        check(j)
    return Judgement(
        checks=tuple(j.checks),
        gpus=j.gpus,
        libraries=j.libraries,
        torch=j.torch,
        glibc=j.glibc,
        coverage=j.coverage,
        cuda_major=j.cuda_major,
        loads=j.loads,
    )
