"""Choose the wheel for a machine among an index's files, and say why every other one lost (pure).

Rules, in the order a file is judged (the first that fails is its reason):

0. ``url``: the file's URL is of the index's own scheme (an http index links only http(s)
   files, never ``file://``); :mod:`cuship.resolve.fetch` says which are not;
1. ``filename``: a wheel file name packaging can read (sdists and other files are passed over);
2. ``version``: the requirement's specifier (pre-releases only when the specifier names one);
3. ``yanked``: yanked files are skipped unless the requirement pins them with ``==``/``===``;
4. ``requires-python``: the file's Requires-Python holds for the target Python;
5. ``tags``: one of the wheel's tags is among the target's (``packaging.tags.sys_tags()``);
6. ``torch``, by the torch ABI the manifest read from the wheel's binaries: ``none`` (links no
   torch) fits any torch or none; ``stable`` (torch's stable C shim) needs torch X.Y or newer;
   ``exact`` (libtorch's C++ API) needs torch X.Y and the same C++ ABI when the label names one
   (torch's ABI unknown: accepted with a note). With no torch installed, a stable or exact wheel
   whose METADATA requires torch is accepted with a note naming the torch that brings in. Without a manifest ABI (an older
   index, or none at all) a label naming torch X.Y needs torch X.Y installed, as for exact;
7. ``cuda``: the driver runs the wheel's CUDA (see :mod:`cuship.resolve._gpu`: minor-version
   compatibility for SASS, the exact minor for PTX JIT);
8. ``gpu``: every GPU is covered by SASS of the same major and a lower-or-equal minor (``a``:
   exactly, ``f``: its family), or by PTX of a lower-or-equal compute capability.

Without a GPU every wheel installs but CUDA wheels cannot run their kernels: CPU-only and pure
wheels rank first, CUDA wheels stay acceptable with a note saying so. Files the index has no
cuship manifest record for are judged by their label alone, with the note "arches unknown"
(and, when the record was there but unreadable, a note saying why it was ignored).

Ranking among the acceptable: (no GPU: CPU wheels first), best tag, highest public version,
CUDA closest to the driver (newest not above what it supports), SASS over PTX JIT over
unknown, then the full version and the file name.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from cuship.compat import Compat, load
from cuship.errors import CushipError, UsageError
from cuship.resolve._gpu import Coverage, driver_runs, gpu_coverage
from cuship.resolve.model import Candidate, Resolution, Target, Verdict, WheelFacts, target_of
from cuship.wheel.names import parse_label

__all__ = [
    "Candidate",
    "Resolution",
    "Target",
    "Verdict",
    "WheelFacts",
    "parse_requirement",
    "select",
    "target_of",
]


def parse_requirement(text: str) -> Requirement:
    """A PEP 508 requirement; a bad one is a :class:`UsageError` quoting it."""
    try:
        return Requirement(text)
    except InvalidRequirement as err:
        raise UsageError(
            f"not a requirement: {text!r} ({err})", hint="write e.g. 'cuvecops' or 'cuvecops>=0.1'"
        ) from err


@functools.lru_cache(maxsize=1024)
def _python_fits(spec: str, python: str) -> bool:
    return SpecifierSet(spec).contains(python, prereleases=True)


@functools.lru_cache(maxsize=1024)
def _version(text: str) -> Version:
    return Version(text)


class _Reject(Exception):
    def __init__(self, rule: str, reason: str) -> None:
        super().__init__(reason)
        self.rule = rule
        self.reason = reason


@dataclass(slots=True)
class _Judging:
    """Facts gathered about one file while its rules run."""

    candidate: Candidate
    version: Version | None = None
    tags: frozenset[str] = frozenset()
    notes: list[str] = field(default_factory=list)
    cuda: Version | None = None
    torch: Version | None = None
    cxx11abi: bool | None = None
    torch_abi: str | None = None
    torch_requirement: str | None = None
    coverage: str = "cpu"
    tag_rank: int = 0


def _check_url(j: _Judging) -> None:
    if j.candidate.refused:
        raise _Reject("url", j.candidate.refused)


def _check_filename(j: _Judging, req: Requirement) -> None:
    name = j.candidate.filename
    if not name.endswith(".whl"):
        raise _Reject("filename", "not a wheel (cuship installs wheels, not sdists)")
    try:
        project, version, _, tags = parse_wheel_filename(name)
    except (InvalidWheelFilename, InvalidVersion) as err:
        raise _Reject("filename", f"invalid wheel file name ({err})") from err
    if canonicalize_name(project) != canonicalize_name(req.name):
        raise _Reject("filename", f"a wheel of {project!r}, not {req.name!r}")
    j.version = version
    j.tags = frozenset(str(t) for t in tags)


def _pins(req: Requirement, version: Version) -> bool:
    return any(s.operator in ("==", "===") and s.contains(version) for s in req.specifier)


def _check_version(j: _Judging, req: Requirement) -> None:
    assert j.version is not None
    allow_pre = bool(req.specifier.prereleases)
    if not req.specifier.contains(j.version, prereleases=True):
        raise _Reject("version", f"version {str(j.version)!r} is not {str(req.specifier)!r}")
    if j.version.is_prerelease and not allow_pre:
        raise _Reject("version", f"{str(j.version)!r} is a pre-release (name it to allow it)")
    yanked = j.candidate.yanked
    if yanked is not None:
        why = f": {yanked}" if yanked else ""
        if not _pins(req, j.version):
            raise _Reject("yanked", f"yanked{why} (pin it with == to take it anyway)")
        j.notes.append(f"yanked{why}; taken because it is pinned")


def _check_python(j: _Judging, target: Target) -> None:
    spec = j.candidate.requires_python
    if not spec:
        return
    try:
        fits = _python_fits(spec, target.python)
    except InvalidSpecifier:
        raise _Reject("requires-python", f"unreadable Requires-Python {spec!r}") from None
    if not fits:
        raise _Reject("requires-python", f"needs Python {spec}; target is {target.python}")


def _check_tags(j: _Judging, tag_ranks: Mapping[str, int]) -> None:
    ranks = [tag_ranks[tag] for tag in j.tags if tag in tag_ranks]
    if not ranks:
        shown = ", ".join(sorted(j.tags)[:3])
        raise _Reject("tags", f"tags {shown} do not fit this interpreter/platform")
    j.tag_rank = min(ranks)


def _label_facts(j: _Judging) -> None:
    """CUDA, torch and ABI from the manifest record, else from the local label."""
    facts = j.candidate.facts
    assert j.version is not None
    if facts is not None:
        j.cuda = _version(facts.cuda) if facts.cuda else None
        built = facts.torch or facts.torch_built
        j.torch = _version(built) if built else None
        j.cxx11abi = facts.cxx11abi
        j.torch_abi = facts.torch_abi
        j.torch_requirement = facts.torch_requirement
        return
    j.notes.append("arches unknown (the index has no cuship manifest)")
    if j.version.local:
        try:
            variant = parse_label(j.version.local)
        except CushipError:
            j.notes.append(f"label {j.version.local!r} not understood")
            return
        j.cuda, j.torch, j.cxx11abi = variant.cuda, variant.torch, variant.cxx11abi


def _check_torch(j: _Judging, target: Target) -> None:
    if j.torch_abi == "none":
        if j.torch is not None:
            j.notes.append("links no torch: fits any torch")
        return
    if j.torch is None:
        if j.torch_abi in ("stable", "exact"):
            j.notes.append(f"links torch ({j.torch_abi} ABI); the torch it needs is unknown")
        return
    want = f"{j.torch.major}.{j.torch.minor}"
    if j.torch_abi == "stable":
        _check_stable_torch(j, target, want)
    else:
        _check_exact_torch(j, target, want)


def _check_exact_torch(j: _Judging, target: Target, want: str) -> None:
    """An exact-ABI wheel (or one judged by its label alone) needs torch X.Y and its C++ ABI."""
    assert j.torch is not None
    if target.torch is None:
        if j.torch_abi == "exact" and j.torch_requirement:
            j.notes.append(f"torch is not installed; installing it brings in {j.torch_requirement}")
            return
        raise _Reject("torch", f"built for torch {want}; torch is not installed")
    have = _version(target.torch)
    if (have.major, have.minor) != (j.torch.major, j.torch.minor):
        raise _Reject("torch", f"built for torch {want}; installed torch is {target.torch}")
    if j.cxx11abi is None:
        return
    if target.cxx11abi is None:
        j.notes.append("torch's C++ ABI unknown; not checked")
    elif target.cxx11abi != j.cxx11abi:
        raise _Reject(
            "torch",
            f"built for cxx11abi={j.cxx11abi}; installed torch has cxx11abi={target.cxx11abi}",
        )


def _check_stable_torch(j: _Judging, target: Target, want: str) -> None:
    """A stable-ABI wheel loads into the torch it was built against and every newer one."""
    assert j.torch is not None
    if target.torch is None:
        if not j.torch_requirement:
            raise _Reject("torch", f"needs torch>={want} (stable ABI); torch is not installed")
        j.notes.append(f"torch is not installed; installing it brings in {j.torch_requirement}")
        return
    have = _version(target.torch)
    if (have.major, have.minor) < (j.torch.major, j.torch.minor):
        raise _Reject(
            "torch", f"built for torch>={want} (stable ABI); installed torch is {target.torch}"
        )
    j.notes.append(f"stable torch ABI: torch>={want} fits torch {target.torch}")


def _driver_text(target: Target) -> str:
    if target.driver and target.driver_cuda:
        return f"driver {target.driver} (CUDA {target.driver_cuda})"
    return f"driver {target.driver}" if target.driver else f"a CUDA {target.driver_cuda} driver"


def _check_cuda(j: _Judging, target: Target, compat: Compat, *, jit: bool) -> None:
    if j.cuda is None or not target.gpus:
        return
    runs = driver_runs(
        j.cuda, driver=target.driver, driver_cuda=target.driver_cuda, jit=jit, compat=compat
    )
    if runs is None:
        j.notes.append("driver version unknown; CUDA not checked")
    elif not runs:
        need = "its PTX needs the toolkit's own driver: " if jit else ""
        raise _Reject("cuda", f"built for CUDA {j.cuda}; {need}{_driver_text(target)} is too old")


def _check_gpus(j: _Judging, target: Target) -> bool:
    """Judge GPU coverage; True when some GPU needs PTX JIT."""
    facts = j.candidate.facts
    if not target.gpus:
        if j.cuda is not None or (facts is not None and (facts.sass or facts.ptx)):
            j.coverage = "no-gpu"
            j.notes.append("no GPU here: it installs, but its CUDA kernels cannot run")
        return False
    if facts is None:
        j.coverage = "unknown" if j.cuda is not None else "cpu"
        return False
    if not facts.sass and not facts.ptx:
        return False
    kinds: list[Coverage] = []
    for name, cc in target.gpus:
        kind, arch = gpu_coverage(cc, facts.sass, facts.ptx)
        if kind is None:
            have = ", ".join([f"sm_{s}" for s in facts.sass] + [f"compute_{p}" for p in facts.ptx])
            raise _Reject("gpu", f"no SASS or PTX for {name} ({cc}); it has {have or 'none'}")
        if kind == "ptx":
            j.notes.append(f"{name} ({cc}) runs PTX compute_{arch} by JIT (slow first launch)")
        kinds.append(kind)
    j.coverage = "ptx" if "ptx" in kinds else "sass"
    return "ptx" in kinds


_COVERAGE_SCORE = {"sass": 3, "ptx": 2, "unknown": 1, "cpu": 0, "no-gpu": 0}


def _rank_key(j: _Judging, target: Target) -> tuple[Any, ...]:
    assert j.version is not None
    cpu_first = 0 if target.gpus else int(j.coverage == "cpu")
    cuda_key: tuple[Any, ...] = (0, 0, ())
    if j.cuda is not None:
        driver = _version(target.driver_cuda) if target.driver_cuda else None
        within = driver is None or j.cuda.release[:2] <= driver.release[:2]
        cuda_key = (1, int(within), j.cuda.release)
    public = _version(j.version.public)
    return (
        cpu_first,
        -j.tag_rank,
        public,
        cuda_key,
        _COVERAGE_SCORE[j.coverage],
        j.version,
        j.candidate.filename,
    )


def _judge(
    c: Candidate, req: Requirement, target: Target, compat: Compat, tag_ranks: Mapping[str, int]
) -> Verdict:
    j = _Judging(candidate=c, notes=list(c.notes))
    try:
        _check_url(j)
        _check_filename(j, req)
        _check_version(j, req)
        _check_python(j, target)
        _check_tags(j, tag_ranks)
        _label_facts(j)
        _check_torch(j, target)
        _check_cuda(j, target, compat, jit=False)
        if _check_gpus(j, target):
            _check_cuda(j, target, compat, jit=True)
    except _Reject as no:
        return Verdict(
            candidate=c,
            version=None if j.version is None else str(j.version),
            rule=no.rule,
            reason=no.reason,
            notes=tuple(j.notes),
            cuda=None if j.cuda is None else str(j.cuda),
            coverage=j.coverage,
        )
    return Verdict(
        candidate=c,
        version=str(j.version),
        rule="ok",
        reason="fits",
        notes=tuple(j.notes),
        cuda=None if j.cuda is None else str(j.cuda),
        coverage=j.coverage,
        key=_rank_key(j, target),
    )


def select(
    requirement: str | Requirement,
    candidates: Iterable[Candidate],
    target: Target,
    *,
    compat: Compat | None = None,
) -> Resolution:
    """Judge every candidate for ``target``; the best acceptable one is ``chosen``."""
    req = parse_requirement(requirement) if isinstance(requirement, str) else requirement
    data = compat or load()
    tag_ranks: dict[str, int] = {}
    for rank, tag in enumerate(target.tags):
        tag_ranks.setdefault(tag, rank)
    verdicts = [_judge(c, req, target, data, tag_ranks) for c in candidates]
    ranked = sorted((v for v in verdicts if v.accepted), key=lambda v: v.key, reverse=True)
    if ranked:
        ranked[0] = replace(ranked[0], reason="chosen")
    return Resolution(
        requirement=str(req),
        target=target,
        chosen=ranked[0] if ranked else None,
        ranked=tuple(ranked),
        rejected=tuple(v for v in verdicts if not v.accepted),
    )
