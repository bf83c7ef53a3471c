"""The resolver's values: an index's files, the machine judged for, and the verdicts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field, replace
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from cuship._read import shown
from cuship._record import frozen
from cuship.arch import is_sm_name
from cuship.errors import InputError
from cuship.judge.model import Judgement
from cuship.judge.needs import ObjectNeeds, WheelNeeds
from cuship.judge.offer import Offer, offer_of
from cuship.judge.record import read_needs
from cuship.machine import Fingerprint

__all__ = ["Candidate", "Resolution", "Target", "Verdict", "WheelFacts", "target_of"]


@frozen
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
    # what each shared object needs (the manifest's "needs" record); None: an older manifest
    # that holds only the union of the arches
    objects: tuple[ObjectNeeds, ...] | None = None
    bundled: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    unread: tuple[str, ...] = ()
    variant: Mapping[str, Any] | None = None  # a variant wheel's {label: properties}

    @classmethod
    def from_describe(cls, record: Mapping[str, object]) -> WheelFacts:
        """From the ``describe`` object of a ``cuship-index.json`` record.

        The record is untrusted input: a field of the wrong type or an unreadable value is an
        :class:`~cuship.errors.InputError` naming it (the caller ignores the record).
        """
        needs = _needs_field(record)
        return cls(
            cuda=_version_field(record, "cuda"),
            torch=_version_field(record, "torch"),
            cxx11abi=_bool_field(record, "cxx11abi"),
            sass=_arch_field(record, "sass"),
            ptx=_arch_field(record, "ptx"),
            torch_abi=_abi_field(record),
            torch_built=_version_field(record, "torch_built"),
            torch_requirement=_requirement_field(record),
            objects=None if needs is None else needs.objects,
            bundled=() if needs is None else needs.bundled,
            requires=() if needs is None else needs.requires,
            unread=() if needs is None else needs.unread,
            variant=_variant_field(record),
        )


_TORCH_ABIS = ("none", "stable", "exact")
_MAX_ARCHES = 128
_MAX_TEXT = 200


def _bad(key: str, value: object, problem: str, *, show: bool = True) -> InputError:
    what = f"describe.{key} {shown(value)}" if show else f"describe.{key}"
    return InputError(
        f"{what} {problem}",
        hint="the index's cuship-index.json is damaged or not cuship's; rebuild it with cuship index",
    )


def _text_field(record: Mapping[str, object], key: str) -> str | None:
    value = record.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _bad(key, value, "is not a string")
    if len(value) > _MAX_TEXT:
        raise _bad(key, value, f"is longer than {_MAX_TEXT} characters")
    return value


def _version_field(record: Mapping[str, object], key: str) -> str | None:
    value = _text_field(record, key)
    if value is None:
        return None
    try:
        Version(value)
    except (InvalidVersion, ValueError):  # ValueError: digits past int()'s limit
        raise _bad(key, value, "is not a version") from None
    return value


def _bool_field(record: Mapping[str, object], key: str) -> bool | None:
    value = record.get(key)
    if value is not None and not isinstance(value, bool):
        raise _bad(key, value, "is not true or false")
    return value


def _arch_field(record: Mapping[str, object], key: str) -> tuple[str, ...]:
    value = record.get(key)
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _bad(key, value, "is not a list")
    if len(value) > _MAX_ARCHES:
        raise _bad(key, value, f"holds {len(value)} items, more than {_MAX_ARCHES}", show=False)
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise _bad(f"{key}[{index}]", item, "is not a string")
        if not is_sm_name(item):
            raise _bad(f"{key}[{index}]", item, "is not an arch such as '90a' or 'sm_120'")
    return tuple(value)


def _abi_field(record: Mapping[str, object]) -> str | None:
    value = _text_field(record, "torch_abi")
    if value is not None and value not in _TORCH_ABIS:
        raise _bad("torch_abi", value, f"is not one of {', '.join(_TORCH_ABIS)}")
    return value


def _requirement_field(record: Mapping[str, object]) -> str | None:
    value = _text_field(record, "torch_requirement")
    if value is None:
        return None
    try:
        Requirement(value)
    except InvalidRequirement:
        raise _bad(
            "torch_requirement", value, "is not a requirement such as 'torch>=2.8'"
        ) from None
    return value


def _variant_field(record: Mapping[str, object]) -> Mapping[str, Any] | None:
    value = record.get("variant")
    if value is None:
        return None
    from cuship.wheel.variant import read_document

    if not isinstance(value, dict):
        raise _bad("variant", value, "is not an object")
    try:
        read_document(_json_text(value), "describe.variant")
    except InputError as err:
        raise _bad("variant", value, err.message.partition(": ")[2] or err.message) from None
    return value


def _json_text(value: object) -> bytes:
    import json

    return json.dumps({"variants": value}).encode()


def _needs_field(record: Mapping[str, object]) -> WheelNeeds | None:
    value = record.get("needs")
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _bad("needs", value, "is not an object")
    return read_needs(value, WheelNeeds(name="", version=""))


@frozen
class Candidate:
    """One file an index lists for a project."""

    filename: str
    url: str
    sha256: str | None = None
    requires_python: str | None = None
    yanked: str | None = None  # None: not yanked; "": yanked without a reason
    size: int | None = None
    facts: WheelFacts | None = None  # None: the index has no cuship manifest record for it
    notes: tuple[str, ...] = ()  # what reading the index said of it (a manifest record ignored)
    refused: str | None = None  # why it must not be fetched at all (a URL outside the index)


@frozen
class Target:
    """The machine a wheel is chosen for: the interpreter's tags and version, and the machine as
    the judge sees it (``offer``, see :func:`target_of`)."""

    tags: tuple[str, ...]
    python: str
    offer: Offer = field(default_factory=Offer)

    def to_json(self) -> dict[str, object]:
        offer, torch = self.offer, self.offer.torch
        return {
            "python": self.python,
            "tags": list(self.tags[:6]),
            "tag_count": len(self.tags),
            "gpus": [{"name": n, "cc": cc} for n, cc in offer.gpus],
            "driver_version": offer.driver_version,
            "driver_cuda": offer.driver_cuda,
            "torch": None if torch is None else torch.version,
            "cxx11abi": None if torch is None else torch.cxx11abi,
            "torch_flavour": None if torch is None else torch.flavour,
            "torch_cuda": None if torch is None else torch.cuda,
            "libraries": None if offer.libraries is None else offer.libraries.to_json(),
            "glibc": offer.glibc,
        }


def target_of(
    fp: Fingerprint, *, tags: Sequence[str] | None = None, python: str | None = None
) -> Target:
    """The :class:`Target` of a fingerprint; ``tags``/``python`` replace the interpreter's. A
    GPU whose compute capability is unknown is left out: no wheel can be judged for it."""
    offer = offer_of(fp)
    return Target(
        tags=tuple(tags) if tags is not None else fp.tags,
        python=python or fp.python,
        offer=replace(offer, gpus=tuple(gpu for gpu in offer.gpus if gpu[1])),
    )


@frozen
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
    judgement: Judgement | None = field(default=None, compare=False, repr=False)

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
            "checks": []
            if self.judgement is None
            else [x.to_json() for x in self.judgement.checks],
        }


@frozen
class Resolution:
    """The choice (None when nothing fits), the other acceptable files in rank order, the rest."""

    requirement: str
    target: Target
    chosen: Verdict | None
    ranked: tuple[Verdict, ...]
    rejected: tuple[Verdict, ...]
    uv: str | None = None  # the file uv with wheel variants would take (None: no variants)

    def to_json(self) -> dict[str, object]:
        return {
            "requirement": self.requirement,
            "target": self.target.to_json(),
            "chosen": None if self.chosen is None else self.chosen.to_json(),
            "ranked": [v.to_json() for v in self.ranked],
            "rejected": [v.to_json() for v in self.rejected],
            "uv_variants_choice": self.uv,
        }
