"""The resolver's values: an index's files, the machine judged for, and the verdicts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cuship.machine import Fingerprint

__all__ = ["Candidate", "Resolution", "Target", "Verdict", "WheelFacts", "target_of"]


@dataclass(frozen=True, slots=True, kw_only=True)
class WheelFacts:
    """What a cuship manifest record says of a wheel beyond its name."""

    cuda: str | None = None
    torch: str | None = None
    cxx11abi: bool | None = None
    sass: tuple[str, ...] = ()
    ptx: tuple[str, ...] = ()
    torch_abi: str | None = None  # "none" | "stable" | "exact"; None: an older manifest
    torch_built: str | None = None  # the torch X.Y it was built against (label or pin)
    torch_requirement: str | None = None  # its Requires-Dist on torch ("torch==2.13.*"), if any

    @classmethod
    def from_describe(cls, record: Mapping[str, object]) -> WheelFacts:
        """From the ``describe`` object of a ``cuship-index.json`` record."""

        def text(key: str) -> str | None:
            value = record.get(key)
            return None if value is None else str(value)

        def arches(key: str) -> tuple[str, ...]:
            value = record.get(key)
            return tuple(str(v) for v in value) if isinstance(value, list) else ()

        abi = record.get("cxx11abi")
        return cls(
            cuda=text("cuda"),
            torch=text("torch"),
            cxx11abi=abi if isinstance(abi, bool) else None,
            sass=arches("sass"),
            ptx=arches("ptx"),
            torch_abi=text("torch_abi"),
            torch_built=text("torch_built"),
            torch_requirement=text("torch_requirement"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """One file an index lists for a project."""

    filename: str
    url: str
    sha256: str | None = None
    requires_python: str | None = None
    yanked: str | None = None  # None: not yanked; "": yanked without a reason
    size: int | None = None
    facts: WheelFacts | None = None  # None: the index has no cuship manifest record for it


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """The machine a wheel is chosen for (see :func:`target_of`)."""

    tags: tuple[str, ...]
    python: str
    gpus: tuple[tuple[str, str], ...] = ()  # (name, compute capability)
    driver: str | None = None
    driver_cuda: str | None = None
    torch: str | None = None
    cxx11abi: bool | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "python": self.python,
            "tags": list(self.tags[:6]),
            "tag_count": len(self.tags),
            "gpus": [{"name": n, "cc": cc} for n, cc in self.gpus],
            "driver": self.driver,
            "driver_cuda": self.driver_cuda,
            "torch": self.torch,
            "cxx11abi": self.cxx11abi,
        }


def target_of(
    fp: Fingerprint, *, tags: Sequence[str] | None = None, python: str | None = None
) -> Target:
    """The :class:`Target` of a fingerprint; ``tags``/``python`` replace the interpreter's."""
    return Target(
        tags=tuple(tags) if tags is not None else fp.tags,
        python=python or fp.python,
        gpus=tuple((g.name, g.cc) for g in fp.gpus if g.cc),
        driver=fp.driver_version,
        driver_cuda=fp.driver_cuda,
        torch=fp.torch.version if fp.torch else None,
        cxx11abi=fp.torch.cxx11abi if fp.torch else None,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """How one file was judged: ``rule`` is ``"ok"`` or the rule it failed; ``reason`` says why."""

    candidate: Candidate
    version: str | None
    rule: str
    reason: str
    notes: tuple[str, ...] = ()
    cuda: str | None = None
    coverage: str = "cpu"  # cpu | sass | ptx | unknown | no-gpu
    key: tuple[Any, ...] = field(default=(), compare=False, repr=False)

    @property
    def accepted(self) -> bool:
        return self.rule == "ok"

    def to_json(self) -> dict[str, object]:
        c = self.candidate
        return {
            "filename": c.filename,
            "url": c.url,
            "sha256": c.sha256,
            "version": self.version,
            "accepted": self.accepted,
            "rule": self.rule,
            "reason": self.reason,
            "notes": list(self.notes),
            "cuda": self.cuda,
            "coverage": self.coverage,
            "arches_known": c.facts is not None,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Resolution:
    """The choice (None when nothing fits), the other acceptable files in rank order, the rest."""

    requirement: str
    target: Target
    chosen: Verdict | None
    ranked: tuple[Verdict, ...]
    rejected: tuple[Verdict, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "requirement": self.requirement,
            "target": self.target.to_json(),
            "chosen": None if self.chosen is None else self.chosen.to_json(),
            "ranked": [v.to_json() for v in self.ranked],
            "rejected": [v.to_json() for v in self.rejected],
        }
