"""Choose the wheel for a machine among an index's files, and say why every other one lost (pure).

Rules, in the order a file is judged (the first that fails is its reason):

0. ``url``: the file's URL is of the index's own scheme (an http index links only http(s)
   files, never ``file://``); :mod:`cuship.resolve.fetch` says which are not;
1. ``filename``: a wheel file name packaging can read (sdists and other files are passed over);
2. ``version``: the requirement's specifier (pre-releases only when the specifier names one);
3. ``yanked``: yanked files are skipped unless the requirement pins them with ``==``/``===``;
4. ``requires-python``: the file's Requires-Python holds for the target Python;
5. ``tags``: one of the wheel's tags is among the target's (``packaging.tags.sys_tags()``);
6. the judge (:func:`cuship.judge.judge`, the same checks doctor, verify and gpu-run make),
   from what the index's manifest read in the wheel's binaries, object by object: ``gpu``
   (SASS/PTX the runtime loads from the package's own objects against every GPU), ``cuda``
   (the CUDA majors its libraries name against the driver; PTX JIT against the label's minor),
   ``libraries`` (every NVIDIA library it links comes from the wheel, its requirements, torch,
   the environment or the system), ``torch`` (a CUDA build of torch, of the CUDA major of its
   runtime, for an object linking libc10_cuda; the release its ABI needs; the C++ ABI),
   ``glibc``. Its first failure is the file's reason; what fits with a caveat or could not be
   checked becomes a note. With no torch installed, a wheel whose METADATA requires torch is
   accepted with a note naming the torch that brings in.

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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from cuship.compat import Compat, load
from cuship.errors import CushipError, UsageError
from cuship.judge import Context, Judgement, ObjectNeeds, Offer, WheelNeeds, judge
from cuship.judge.needs import check_abi, pin_of
from cuship.resolve.model import Candidate, Resolution, Target, Verdict, WheelFacts, target_of
from cuship.resolve.variants import UvMachine, uv_label
from cuship.wheel.names import parse_label
from cuship.wheel.variant import split_variant

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
    judgement: Judgement | None = None
    variant: str | None = None  # its wheel-variant label (PEP 825), if it is a variant wheel
    uv_pick: bool = False  # uv with wheel variants would take it


def _check_url(j: _Judging) -> None:
    if j.candidate.refused:
        raise _Reject("url", j.candidate.refused)


def _check_filename(j: _Judging, req: Requirement) -> None:
    name, j.variant = split_variant(j.candidate.filename)
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


def _needs(j: _Judging) -> WheelNeeds:
    """The wheel's needs as the index's manifest records them: object by object, or (an older
    manifest) its union of arches as one object, or (no manifest) its label alone."""
    assert j.version is not None
    c, facts = j.candidate, j.candidate.facts
    name = c.filename.split("-", 1)[0]
    base = WheelNeeds(
        name=name,
        version=str(j.version),
        tags=tuple(sorted(j.tags)),
        label_cuda=None if j.cuda is None else str(j.cuda),
        label_torch=None if j.torch is None else f"{j.torch.major}.{j.torch.minor}",
        label_cxx11abi=j.cxx11abi,
    )
    if facts is None:
        return replace(base, complete=False)
    pin = pin_of(facts.torch_requirement)
    if facts.torch is None and facts.torch_built:
        base = replace(base, label_torch=facts.torch_built if pin is None else None)
    base = replace(base, torch_requirement=pin)
    if facts.objects is None:
        abi = check_abi(facts.torch_abi or "none")
        if not (facts.sass or facts.ptx or abi != "none"):
            return base  # nothing in it to judge object by object
        pseudo = ObjectNeeds(
            path="(its shared objects)",
            role="extension",
            sass=facts.sass,
            ptx=facts.ptx,
            torch_abi=abi,
        )
        return replace(base, objects=(pseudo,), complete=False)
    return replace(
        base,
        objects=facts.objects,
        bundled=facts.bundled,
        requires=facts.requires,
        unread=facts.unread,
    )


def _check_torch_seen(j: _Judging, why: str) -> None:
    """Where the target's torch cannot be seen, a torch-linked wheel is not taken: it would
    fit one torch and break, or replace, another."""
    facts = j.candidate.facts
    linked = j.torch is not None or (
        facts is not None and (facts.torch_abi not in (None, "none") or facts.torch_requirement)
    )
    if linked:
        raise _Reject("torch", f"links torch, and {why}")


def _run_judge(
    j: _Judging, req: Requirement, target: Target, compat: Compat, offer: Offer
) -> Judgement:
    """The judge's verdict on the wheel (before an install); its first failure rejects it."""
    needs = _needs(j)
    judgement = judge(
        needs,
        offer,
        compat=compat,
        context=Context(installing=True, extras=frozenset(req.extras)),
    )
    j.judgement = judgement
    j.notes.extend(
        ("not checked: " if c.status == "unchecked" else "") + c.message
        for c in judgement.caveats
        if not (c.area == "files" and j.candidate.facts is None)
    )
    if j.candidate.facts is None:
        j.notes.append("arches unknown (the index has no cuship manifest)")
    j.notes.extend(
        f"{run.gpu} ({run.cc}) runs PTX {', '.join(run.arches)} by JIT (slow first launch)"
        for run in judgement.gpus
        if run.runs == "ptx"
    )
    failure = judgement.first_failure
    if failure is not None:
        raise _Reject(failure.area, failure.message)
    j.coverage = _coverage(j, judgement, target)
    return judgement


def _coverage(j: _Judging, judgement: Judgement, target: Target) -> str:
    if j.candidate.facts is None:
        if not target.offer.gpus:
            return "no-gpu" if j.cuda is not None else "cpu"
        return "unknown" if j.cuda is not None else "cpu"
    if judgement.coverage == "no-gpu" or (not target.offer.gpus and j.cuda is not None):
        return "no-gpu"
    return "cpu" if judgement.coverage in ("none", "unknown") else judgement.coverage


_COVERAGE_SCORE = {"sass": 3, "ptx": 2, "unknown": 1, "cpu": 0, "no-gpu": 0}


def _rank_key(j: _Judging, target: Target) -> tuple[Any, ...]:
    assert j.version is not None
    cpu_first = 0 if target.offer.gpus else int(j.coverage == "cpu")
    cuda_key: tuple[Any, ...] = (0, 0, ())
    if j.cuda is not None:
        driver = _version(target.offer.driver_cuda) if target.offer.driver_cuda else None
        within = driver is None or j.cuda.release[:2] <= driver.release[:2]
        cuda_key = (1, int(within), j.cuda.release)
    public = _version(j.version.public)
    return (
        cpu_first,
        -j.tag_rank,
        public,
        cuda_key,
        _COVERAGE_SCORE[j.coverage],
        int(j.uv_pick),
        j.version,
        j.candidate.filename,
    )


def _judge(
    c: Candidate,
    req: Requirement,
    target: Target,
    compat: Compat,
    tag_ranks: Mapping[str, int],
    offer: Offer,
    uv_picks: frozenset[str] = frozenset(),
    torch_unseen: str | None = None,
) -> Verdict:
    j = _Judging(candidate=c, notes=list(c.notes), uv_pick=c.filename in uv_picks)
    try:
        _check_url(j)
        _check_filename(j, req)
        _check_version(j, req)
        _check_python(j, target)
        _check_tags(j, tag_ranks)
        _label_facts(j)
        if torch_unseen is not None:
            _check_torch_seen(j, torch_unseen)
        _run_judge(j, req, target, compat, offer)
    except _Reject as no:
        return Verdict(
            candidate=c,
            version=None if j.version is None else str(j.version),
            rule=no.rule,
            reason=no.reason,
            notes=tuple(j.notes),
            cuda=None if j.cuda is None else str(j.cuda),
            coverage=j.coverage,
            judgement=j.judgement,
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
        judgement=j.judgement,
    )


def select(
    requirement: str | Requirement,
    candidates: Iterable[Candidate],
    target: Target,
    *,
    compat: Compat | None = None,
    variants: Mapping[str, Mapping[str, Any]] | None = None,
    torch_unseen: str | None = None,
) -> Resolution:
    """Judge every candidate for ``target``; the best acceptable one is ``chosen``.
    ``torch_unseen``: why the target's torch cannot be seen; then no torch-linked file fits."""
    req = parse_requirement(requirement) if isinstance(requirement, str) else requirement
    data = compat or load()
    tag_ranks: dict[str, int] = {}
    for rank, tag in enumerate(target.tags):
        tag_ranks.setdefault(tag, rank)
    offer = target.offer
    listed = list(candidates)
    uv = uv_choice(req, listed, target, tag_ranks, variants or {})
    picks = frozenset(() if uv is None else (uv,))
    verdicts = [_judge(c, req, target, data, tag_ranks, offer, picks, torch_unseen) for c in listed]
    ranked = sorted((v for v in verdicts if v.accepted), key=lambda v: v.key, reverse=True)
    if ranked:
        ranked[0] = replace(ranked[0], reason="chosen", notes=_uv_notes(ranked[0], uv, verdicts))
    return Resolution(
        requirement=str(req),
        target=target,
        chosen=ranked[0] if ranked else None,
        ranked=tuple(ranked),
        rejected=tuple(v for v in verdicts if not v.accepted),
        uv=uv,
    )


def _uv_notes(chosen: Verdict, uv: str | None, verdicts: Sequence[Verdict]) -> tuple[str, ...]:
    """The chosen file's notes, and where uv with wheel variants would take another file."""
    if uv is None or uv == chosen.candidate.filename:
        return chosen.notes
    theirs = next((v for v in verdicts if v.candidate.filename == uv), None)
    why = (
        f"which does not run here ({theirs.rule}: {theirs.reason})"
        if theirs is not None and not theirs.accepted
        else "by its NVIDIA provider's rules (SASS by major, PTX only within its own major)"
    )
    return (*chosen.notes, f"uv --preview-features wheel-variants would take {uv}, {why}")


def uv_choice(
    req: Requirement,
    candidates: Sequence[Candidate],
    target: Target,
    tag_ranks: Mapping[str, int],
    variants: Mapping[str, Mapping[str, Any]],
) -> str | None:
    """The file uv with ``--preview-features wheel-variants`` takes: of the newest version
    whose files fit the requirement and this interpreter, the variant its NVIDIA provider
    prefers (from the index's variants.json, else the manifest's records of the variant
    wheels), else the null variant, else the plain wheel; None without variant wheels."""
    fitting: list[tuple[Version, str, str | None]] = []
    for c in candidates:
        name, label = split_variant(c.filename)
        try:
            project, version, _, tags = parse_wheel_filename(name)
        except (InvalidWheelFilename, InvalidVersion):
            continue
        if canonicalize_name(project) != canonicalize_name(req.name) or c.yanked is not None:
            continue
        if not req.specifier.contains(version) or not any(str(t) in tag_ranks for t in tags):
            continue
        fitting.append((version, c.filename, label))
    if not any(label for _, _, label in fitting):
        return None
    newest = max(version for version, _, _ in fitting)
    files = [(name, label) for version, name, label in fitting if version == newest]
    table = dict(variants.get(str(newest), {}))
    for c in candidates:
        if c.facts is not None and c.facts.variant:
            table.update(c.facts.variant)
    label = uv_label(table, UvMachine.of(target.offer.driver_cuda, target.offer.gpus))
    by_label = {lbl: name for name, lbl in files}
    return by_label.get(label) if label is not None else by_label.get(None)
