"""Judge one installed distribution on this machine with the one judge (:mod:`cuship.judge`) and
put its verdict in doctor's words (pure): each failed check is a problem with its fix, what fits
partly is a note, and what could not be checked is said apart, never as passing."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cuship.compat import Compat
from cuship.doctor.model import InstalledPackage, Machine, PackageReport, Problem
from cuship.judge import Context, WheelNeeds, fixes, judge, object_needs
from cuship.judge.needs import label_parts

__all__ = ["judge_installed", "needs_of"]


def needs_of(package: InstalledPackage) -> WheelNeeds:
    """What an installed distribution needs, as its files say (each object where it lies)."""
    cuda, torch, cxx11abi = label_parts(package.provenance.variant)
    root = package.location.rstrip("/")
    return WheelNeeds(
        name=package.name,
        version=package.version,
        objects=tuple(object_needs(o, location=f"{root}/{o.path}") for o in package.objects),
        bundled=package.shared,
        requires=package.requires,
        torch_requirement=package.torch_requirement,
        label_cuda=cuda,
        label_torch=torch,
        label_cxx11abi=cxx11abi,
        tags=package.tags,
        index=package.provenance.index,
    )


def judge_installed(
    package: InstalledPackage,
    machine: Machine,
    compat: Compat,
    demangle: Callable[[Sequence[str]], Sequence[str]] | None = None,
) -> PackageReport:
    """Every check of ``package`` on ``machine``; problems carry their fix. ``demangle``: what
    turns mangled C++ names into readable ones (c++filt), None to leave them."""
    needs = needs_of(package)
    context = Context(installing=False, demangle=demangle)
    verdict = judge(needs, machine.offer, compat=compat, context=context)
    problems = [
        Problem(area="files", message=line, fix=fixes.reinstall_same(needs))
        for line in package.broken
    ]
    problems += [Problem(area=c.area, message=c.message, fix=c.fix) for c in verdict.failures]
    notes = list(package.notes)
    notes += [c.message for c in verdict.checks if c.status == "partial"]
    if not package.tags:
        notes.append("no WHEEL file with tags: its glibc needs are unknown")
    return PackageReport(
        name=package.name,
        version=package.version,
        location=package.location,
        provenance=package.provenance,
        objects=tuple(o.path for o in package.objects),
        sass=needs.sass,
        ptx=needs.ptx,
        gpus=verdict.gpus,
        libraries=tuple(lib for lib in verdict.libraries if lib.cuda_major is not None),
        torch=verdict.torch,
        glibc=verdict.glibc,
        problems=tuple(problems),
        notes=tuple(notes),
        checks=verdict.checks,
        loads=verdict.loads,
        unchecked=tuple(
            c.message
            for c in verdict.checks
            if c.status == "unchecked" and not (c.area == "glibc" and not package.tags)
        ),
    )
