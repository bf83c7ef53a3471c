"""Expand a config into build jobs: python × cuda × torch × arch (× abi × platform), pruned.

Pure: no I/O, no subprocess. Every dropped combination keeps the reason it was dropped, so
``cuship matrix --explain`` can show it; architectures a toolkit cannot target are removed from
that job and noted. Renderers produce GitHub Actions and GitLab CI matrices.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import itertools
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from cuship._record import frozen
from cuship.arch import ArchSpec, parse_arch_list
from cuship.compat import Compat, CudaToolkit, TorchRelease
from cuship.config import Config, MatrixRule
from cuship.errors import ConfigError, CushipError, UsageError
from cuship.wheel.names import CPU_LABEL, Variant, default_template, format_label, with_label
from cuship.wheel.torchabi import TorchAbi

__all__ = [
    "AbiRecord",
    "BuildJob",
    "Matrix",
    "Pruned",
    "TorchFreeKey",
    "expand",
    "expand_all",
    "jobs_with_configs",
    "select_jobs",
    "shard",
    "torch_bound_fields",
    "torch_free_key",
    "unknown_job",
    "without_torch",
]


@frozen
class BuildJob:
    """One wheel to build."""

    id: str
    project: str
    version: str
    python: str
    cuda: Version
    torch: Version | None
    torch_version: Version | None
    torch_cuda: str | None
    cxx11abi: bool | None
    arch: ArchSpec
    platform: str
    label: str
    torch_on_pypi: bool = False  # PyPI's own torch_version wheel is the torch_cuda build

    @property
    def torch_variant(self) -> str | None:
        """The job's torch build as the PyTorch index names it: ``cu130``, ``cpu``; None: no
        torch."""
        if self.torch_version is None:
            return None
        return "cu" + self.torch_cuda.replace(".", "") if self.torch_cuda else "cpu"

    @property
    def cpu(self) -> bool:
        """A job of a package with no device code (``[matrix] device_code = false``)."""
        return not self.arch.targets

    @property
    def python_tag(self) -> str:
        return "cp" + self.python.replace(".", "")

    @property
    def cuda_variant(self) -> str:
        return f"cu{self.cuda.major}{self.cuda.minor}"

    @property
    def wheel_version(self) -> Version:
        return with_label(self.version, self.label)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "project": self.project,
            "version": self.version,
            "wheel_version": str(self.wheel_version),
            "python": self.python,
            "python_tag": self.python_tag,
            "cuda": str(self.cuda),
            "cuda_variant": self.cuda_variant,
            "torch": None if self.torch is None else str(self.torch),
            "torch_version": None if self.torch_version is None else str(self.torch_version),
            "torch_cuda": self.torch_cuda,
            "cxx11abi": self.cxx11abi,
            "arch": self.arch.torch,
            "cmake_arch": self.arch.cmake,
            "platform": self.platform,
            "label": self.label,
        }


@frozen
class Pruned:
    """A combination that was dropped, or an architecture dropped from a job, and why."""

    combination: Mapping[str, str]
    reason: str
    rule: str
    job: str | None = None


@frozen
class Matrix:
    jobs: tuple[BuildJob, ...]
    pruned: tuple[Pruned, ...]
    arch_drops: tuple[Pruned, ...]
    considered: int
    notes: tuple[str, ...] = ()  # what happened to the torch axis, and why

    def shard(self, index: int, count: int) -> Matrix:
        """The matrix with only the ``index``-th of ``count`` even slices of its jobs."""
        return dataclasses.replace(self, jobs=shard(self.jobs, index, count))

    def to_json(self) -> dict[str, Any]:
        """``cuship matrix --format json``: the jobs, and what was pruned or dropped and why."""
        return {
            "jobs": [j.to_json() for j in self.jobs],
            "considered": self.considered,
            "pruned": [
                {"combination": dict(p.combination), "rule": p.rule, "reason": p.reason}
                for p in self.pruned
            ],
            "arch_drops": [{"job": p.job, "reason": p.reason} for p in self.arch_drops],
            "torch_axis": list(self.notes),
        }

    def job(self, job_id: str) -> BuildJob:
        for job in self.jobs:
            if job.id == job_id:
                return job
        raise unknown_job(job_id, [j.id for j in self.jobs])


@frozen
class AbiRecord:
    """What a built wheel showed about torch (``.cuship/torch-abi.json``), so a later run knows
    without building whether the torch axis means anything."""

    project: str
    version: str
    torch_abi: TorchAbi
    wheel: str
    job: str

    def matches(self, project: str | None, version: str | None) -> bool:
        """Whether the record speaks for this project name and version."""
        return canonicalize_name(self.project) == canonicalize_name(
            project or "project"
        ) and self.version == (version or "0")

    @property
    def torch_free(self) -> bool:
        """A none or stable wheel serves every torch (and either C++ ABI)."""
        return self.torch_abi in ("none", "stable")

    @property
    def why(self) -> str:
        return {
            "none": "links no torch",
            "stable": "uses only torch's stable C ABI",
            "exact": "links libtorch's C++ ABI",
        }[self.torch_abi]


TorchFreeKey = tuple[str, str, str, str, str, str]
"""A job without torch: project, version, python, CUDA, arch and platform."""

_TORCH_FIELDS = ("torch", "torch_short", "abi")
_TORCH_ID_PART = re.compile(r"torch\d.*|cxx11abi(TRUE|FALSE)")


def torch_bound_fields(template: str | None) -> tuple[str, ...]:
    """The torch fields (``{torch}``, ``{torch_short}``, ``{abi}``) a custom label template names;
    a label that names them cannot lose the torch axis."""
    if template is None:
        return ()
    return tuple(f for f in _TORCH_FIELDS if "{" + f + "}" in template)


def torch_free_key(job: BuildJob) -> TorchFreeKey:
    """What ``job`` shares with every job that differs from it only in torch and the C++ ABI."""
    return (job.project, job.version, job.python, str(job.cuda), job.arch.torch, job.platform)


def without_torch(job: BuildJob, template: str | None = None) -> BuildJob:
    """``job`` with an ID and label that name no torch and no C++ ABI (``+cu130``); it still
    builds against its torch. ``template``: the config's ``[label] template`` (None: default)."""
    bound = torch_bound_fields(template)
    if bound:
        raise UsageError(
            f"label template {template!r} names {{{bound[0]}}}: its labels cannot drop torch",
            hint="remove the torch fields from [label] template, or set [matrix] torch_axis "
            '= "always"',
        )
    head = f"{job.project}-{job.version}-{job.python_tag}-{job.cuda_variant}"
    tail = job.id.removeprefix(head).split("-")[1:] if job.id.startswith(head) else []
    kept = [part for part in tail if not _TORCH_ID_PART.fullmatch(part)]
    label = format_label(
        Variant(cuda=job.cuda), template or default_template(torch=False, abi=False)
    )
    return dataclasses.replace(job, id="-".join([head, *kept]), label=label)


def select_jobs(
    config: Config,
    compat: Compat,
    job_ids: Sequence[str] = (),
    *,
    torch_abi: AbiRecord | None = None,
) -> list[tuple[Config, BuildJob]]:
    """(config, job) pairs of the matrix: all of them, or the ones ``job_ids`` names in that
    order; an id the matrix does not have is a :class:`UsageError` listing the ones it has."""
    pairs = jobs_with_configs(config, compat, torch_abi=torch_abi)
    if not job_ids:
        return list(pairs)
    by_id = {job.id: (cfg, job) for cfg, job in pairs}
    for job_id in job_ids:
        if job_id not in by_id:
            raise unknown_job(job_id, list(by_id))
    return [by_id[job_id] for job_id in job_ids]


def unknown_job(job_id: str, known: Sequence[str]) -> UsageError:
    """The error for a job ID that is not in the matrix, naming the nearest ones."""
    import difflib

    near = difflib.get_close_matches(job_id, known, n=3, cutoff=0.5)
    hint = f"nearest: {', '.join(near)}" if near else "list jobs with `cuship matrix`"
    return UsageError(f"no job {job_id!r} in the matrix", hint=hint)


@frozen(kw_only=False)
class _Combo:
    python: str
    cuda: str
    torch: str | None
    arch: str
    cxx11abi: bool | None
    platform: str

    def describe(self) -> dict[str, str]:
        out = {"python": self.python, "cuda": self.cuda}
        if self.torch is not None:
            out["torch"] = self.torch
        out["arch"] = self.arch
        if self.cxx11abi is not None:
            out["cxx11abi"] = "TRUE" if self.cxx11abi else "FALSE"
        out["platform"] = self.platform
        return out


def _matches(pattern: str | bool | None, value: str | bool | None) -> bool:
    if pattern is None:
        return True
    if isinstance(pattern, bool) or isinstance(value, bool) or value is None:
        return pattern == value
    return (
        pattern == value or value.startswith(pattern + ".") or fnmatch.fnmatchcase(value, pattern)
    )


def _rule_matches(rule: MatrixRule, combo: _Combo) -> bool:
    return all(
        _matches(getattr(rule, name), getattr(combo, name))
        for name in ("python", "cuda", "torch", "arch", "cxx11abi", "platform")
    )


def _rule_text(rule: MatrixRule) -> str:
    parts = [
        f"{f.name}={getattr(rule, f.name)}"
        for f in dataclasses.fields(rule)
        if getattr(rule, f.name) is not None
    ]
    return "{" + ", ".join(parts) + "}"


class _Expander:
    """Holds the looked-up knowledge for one expansion (each version is looked up once)."""

    def __init__(self, config: Config, compat: Compat) -> None:
        self.config = config
        self.compat = compat
        self.source = str(config.source)
        m = config.matrix
        self.toolkits = (
            self._lookup("cuda", m.cuda, compat.cuda)
            if m.cuda
            else {str(compat.toolkits[-1].version): compat.toolkits[-1]}
        )
        self.torches = self._lookup("torch", m.torch, compat.torch_release)
        self.archs = (
            {text: parse_arch_list(text) for text in m.arch}
            if m.device_code
            else {CPU_LABEL: ArchSpec(targets=())}
        )
        if not m.device_code:  # one toolkit: the job's CUDA names nothing a CPU wheel holds
            self.toolkits = dict(itertools.islice(self.toolkits.items(), 1))
        self.requires = SpecifierSet(config.project.requires_python or "")
        self.pythons = m.python or self._default_pythons()
        self.abi_dimension = bool(m.cxx11abi)
        template = config.label.template or default_template(
            torch=bool(m.torch), abi=bool(m.cxx11abi), cuda=m.device_code
        )
        self.template = template
        self._check_arches_targetable()

    def _lookup(self, key: str, specs: Sequence[str], find: Any) -> dict[str, Any]:
        found = {}
        for i, spec in enumerate(specs):
            try:
                found[spec] = find(spec)
            except CushipError as err:
                raise ConfigError(
                    self.source, f"matrix.{key}[{i}]", err.message, hint=err.hint
                ) from err
        return found

    def _default_pythons(self) -> tuple[str, ...]:
        """The CPythons the matrix's torch releases support (no torch axis: the newest torch
        release's, a list of the CPythons alive now), within requires-python; never the
        union over every release known (3.8 from torch 2.4 is long past its end of life)."""
        releases = list(self.torches.values()) or [self.compat.torch[-1]]
        known = sorted({p for t in releases for p in t.pythons}, key=Version)
        return tuple(p for p in known if Version(p + ".0") in self.requires or not self.requires)

    def _check_arches_targetable(self) -> None:
        for i, (text, spec) in enumerate(self.archs.items()):
            for target in spec.targets:
                if not any(tk.can_target(target.sm) for tk in self.toolkits.values()):
                    able = [
                        str(tk.version) for tk in self.compat.toolkits if tk.can_target(target.sm)
                    ]
                    chosen = ", ".join(self.toolkits)
                    hint = (
                        f"CUDA {able[0]} to {able[-1]} can; add one to matrix.cuda or drop the arch"
                        if able
                        else "no known CUDA toolkit targets it; check the spelling"
                    )
                    raise ConfigError(
                        self.source,
                        f"matrix.arch[{i}]",
                        f"sm_{target.sm} (from {text!r}) cannot be targeted by CUDA {chosen}",
                        hint=hint,
                    )

    def combos(self) -> Iterator[_Combo]:
        m = self.config.matrix
        torches: Sequence[str | None] = list(m.torch) or [None]
        abis: Sequence[bool | None] = list(m.cxx11abi) or [None]
        for py, cuda, torch, arch, abi, plat in itertools.product(
            self.pythons, self.toolkits, torches, self.archs, abis, m.platform
        ):
            yield _Combo(py, cuda, torch, arch, abi, plat)

    def included(self) -> Iterator[_Combo]:
        m = self.config.matrix
        for i, rule in enumerate(m.include):
            if rule.python is None or rule.cuda is None or (m.torch and rule.torch is None):
                raise ConfigError(
                    self.source,
                    f"matrix.include[{i}]",
                    "an include rule must name python and cuda (and torch when the matrix has torch)",
                )
            if rule.cuda not in self.toolkits:
                self.toolkits |= self._lookup("include.cuda", [rule.cuda], self.compat.cuda)
            if rule.torch is not None and rule.torch not in self.torches:
                self.torches |= self._lookup(
                    "include.torch", [rule.torch], self.compat.torch_release
                )
            arch = rule.arch or next(iter(self.archs))
            self.archs.setdefault(arch, parse_arch_list(arch))
            yield _Combo(
                rule.python,
                rule.cuda,
                rule.torch,
                arch,
                rule.cxx11abi,
                rule.platform or m.platform[0],
            )

    def prune_reason(self, combo: _Combo) -> tuple[str, str] | None:
        for i, rule in enumerate(self.config.matrix.exclude):
            if _rule_matches(rule, combo):
                return "exclude", f"excluded by matrix.exclude[{i}] {_rule_text(rule)}"
        if self.requires and Version(combo.python + ".0") not in self.requires:
            return (
                "requires-python",
                f"Python {combo.python} is outside requires-python {self.requires}",
            )
        if combo.torch is None:
            return None
        return self._torch_reason(self.torches[combo.torch], self.toolkits[combo.cuda], combo)

    def _torch_reason(
        self, tr: TorchRelease, tk: CudaToolkit, combo: _Combo
    ) -> tuple[str, str] | None:
        if combo.python not in tr.pythons:
            return "torch-python", f"torch {tr.minor} supports Python {', '.join(tr.pythons)}"
        if self.config.matrix.device_code and self.torch_cuda(tr, tk) is None:
            published = ", ".join("cu" + c.replace(".", "") for c in tr.cuda)
            wanted = (
                f"CUDA {tk.version.major}.x"
                if self.config.matrix.torch_cuda == "major"
                else tk.variant
            )
            return "torch-cuda", f"torch {tr.minor} publishes {published}: none for {wanted}"
        if combo.cxx11abi is not None and combo.cxx11abi not in tr.cxx11_abi:
            abi = "TRUE" if combo.cxx11abi else "FALSE"
            return "torch-abi", f"torch {tr.minor} wheels are not built with cxx11abi {abi}"
        return None

    def torch_cuda(self, tr: TorchRelease, tk: CudaToolkit) -> str | None:
        """The torch CUDA variant a job builds against, or None when torch has none that fits."""
        mine = Version(tk.major_minor)
        if self.config.matrix.torch_cuda == "exact":
            return tk.major_minor if tk.major_minor in tr.cuda else None
        same = sorted(Version(c) for c in tr.cuda if Version(c).major == mine.major)
        if not same:
            return None
        older = [v for v in same if v <= mine]
        return str(older[-1] if older else same[0])


def _job_id(ex: _Expander, combo: _Combo, tk: CudaToolkit, spec: ArchSpec) -> str:
    name = ex.config.project.name or "project"
    parts = [
        name,
        ex.config.project.version or "0",
        "cp" + combo.python.replace(".", ""),
        tk.variant if ex.config.matrix.device_code else CPU_LABEL,
    ]
    if combo.torch is not None:
        parts.append(f"torch{combo.torch}")
    if combo.cxx11abi is not None:
        parts.append("cxx11abi" + ("TRUE" if combo.cxx11abi else "FALSE"))
    if len(ex.archs) > 1:
        parts.append(spec.slug)
    if len(ex.config.matrix.platform) > 1:
        parts.append(combo.platform)
    return "-".join(parts)


def _make_job(ex: _Expander, combo: _Combo, drops: list[Pruned]) -> BuildJob | Pruned:
    tk = ex.toolkits[combo.cuda]
    spec = ex.archs[combo.arch]
    missing = frozenset(t.sm for t in spec.targets if not tk.can_target(t.sm))
    if missing:
        spec = spec.without(missing)
    tr = ex.torches[combo.torch] if combo.torch is not None else None
    job_id = _job_id(ex, combo, tk, spec)
    for sm in sorted(missing):
        reason = f"CUDA {tk.version} cannot target sm_{sm} (it supports {', '.join(tk.sms)})"
        drops.append(Pruned(combination=combo.describe(), reason=reason, rule="arch", job=job_id))
    if not spec.targets and ex.config.matrix.device_code:
        return Pruned(combination=combo.describe(), reason="no architecture left", rule="arch")
    variant = Variant(cuda=tk.version, torch=tr.version if tr else None, cxx11abi=combo.cxx11abi)
    torch_cuda = ex.torch_cuda(tr, tk) if tr and spec.targets else None
    return BuildJob(
        id=job_id,
        project=ex.config.project.name or "project",
        version=ex.config.project.version or "0",
        python=combo.python,
        cuda=tk.version,
        torch=tr.version if tr else None,
        torch_version=tr.latest if tr else None,
        torch_cuda=torch_cuda,
        torch_on_pypi=tr is not None and torch_cuda is not None and tr.pypi_cuda == torch_cuda,
        cxx11abi=combo.cxx11abi,
        arch=spec,
        platform=combo.platform,
        label=format_label(variant, ex.template),
    )


def expand(config: Config, compat: Compat, *, torch_abi: AbiRecord | None = None) -> Matrix:
    """All jobs of the config's matrix, with every pruned combination and its reason.

    ``torch_abi``: what an earlier build of this project showed (see
    :func:`cuship.builder.record.load_record`). A none or stable record for this project and
    version collapses the torch axis (unless ``[matrix] torch_axis = "always"``): one job per
    combination without torch, built against the lowest torch of the axis.
    """
    ex = _Expander(config, compat)
    jobs: dict[str, BuildJob] = {}
    pruned: list[Pruned] = []
    drops: list[Pruned] = []
    considered = 0
    candidates = itertools.chain(
        ((c, False) for c in ex.combos()), ((c, True) for c in ex.included())
    )
    for combo, from_include in candidates:
        considered += 1
        reason = ex.prune_reason(combo)
        if reason is not None and not (from_include and reason[0] == "exclude"):
            pruned.append(Pruned(combination=combo.describe(), rule=reason[0], reason=reason[1]))
            continue
        made = _make_job(ex, combo, drops)
        if isinstance(made, Pruned):
            pruned.append(made)
        elif made.id not in jobs:
            jobs[made.id] = made
    matrix = Matrix(
        jobs=tuple(jobs.values()),
        pruned=tuple(pruned),
        arch_drops=tuple(drops),
        considered=considered,
    )
    return _collapse_axis(matrix, config, torch_abi)


def _collapse_axis(matrix: Matrix, config: Config, record: AbiRecord | None) -> Matrix:
    """The matrix with its torch axis collapsed where ``record`` says it means nothing."""
    m = config.matrix
    if record is None or not m.torch or m.torch_axis == "always":
        return matrix
    if not record.matches(config.project.name, config.project.version):
        return matrix
    source = f"{record.project} {record.version} {record.why} (torch_abi {record.torch_abi}, "
    source += f"recorded from {record.wheel})"
    bound = torch_bound_fields(config.label.template)
    if not record.torch_free:
        return dataclasses.replace(matrix, notes=(f"torch axis kept: {source}",))
    if bound:
        note = f"torch axis kept: {source}, but [label] template names {{{bound[0]}}}"
        return dataclasses.replace(matrix, notes=(note,))
    groups: dict[TorchFreeKey, BuildJob] = {}
    for job in matrix.jobs:  # the lowest torch of each group: a stable wheel's oldest torch
        key = torch_free_key(job)
        if key not in groups or _torch_order(job) < _torch_order(groups[key]):
            groups[key] = job
    jobs = tuple(without_torch(j, config.label.template) for j in groups.values())
    note = f"torch axis collapsed: {source}: {len(matrix.jobs)} jobs → {len(jobs)}"
    return dataclasses.replace(matrix, jobs=jobs, notes=(note,))


def _torch_order(job: BuildJob) -> Version:
    return job.torch or Version("0")


def jobs_with_configs(
    config: Config, compat: Compat, *, torch_abi: AbiRecord | None = None
) -> tuple[tuple[Config, BuildJob], ...]:
    """Every job with the config that builds it (one config per packages.yml entry and version);
    ``torch_abi`` as for :func:`expand` (it counts for the package it names)."""
    from cuship.config import package_configs

    return tuple(
        (cfg, job)
        for cfg in package_configs(config)
        for job in expand(cfg, compat, torch_abi=torch_abi).jobs
    )


def expand_all(config: Config, compat: Compat, *, torch_abi: AbiRecord | None = None) -> Matrix:
    """:func:`expand` over every package of a packages.yml (or the one project), merged."""
    from cuship.config import package_configs

    parts = [expand(cfg, compat, torch_abi=torch_abi) for cfg in package_configs(config)]
    return Matrix(
        jobs=tuple(j for m in parts for j in m.jobs),
        pruned=tuple(p for m in parts for p in m.pruned),
        arch_drops=tuple(p for m in parts for p in m.arch_drops),
        considered=sum(m.considered for m in parts),
        notes=tuple(n for m in parts for n in m.notes),
    )


def shard(jobs: Sequence[BuildJob], index: int, count: int) -> tuple[BuildJob, ...]:
    """The ``index``-th of ``count`` even slices (sizes differ by at most one), in order."""
    size, extra = divmod(len(jobs), count)
    start = (index - 1) * size + min(index - 1, extra)
    end = start + size + (1 if index <= extra else 0)
    return tuple(jobs[start:end])
