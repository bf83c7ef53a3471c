"""What uv 0.13.8 with ``--preview-features wheel-variants`` would take, by its built-in NVIDIA
provider's rules (pure; ``research/variants.md``, established by experiment), so that cuship's
choice can say where it differs and why.

- The machine as uv sees it: the driver's CUDA version (its user-mode driver's), and the
  highest compute capability among the GPUs. No driver: every NVIDIA variant is incompatible.
- A variant fits when each of its NVIDIA features has a value that fits:
  ``cuda_version_lower_bound`` ≤ the driver's CUDA; ``cuda_version_upper_bound`` > it
  (exclusive); ``sm_arch`` ``{X}{m}_real`` for a GPU X.Y of the same major with m ≤ Y,
  ``{X}0_virtual`` for any GPU of major X. The null variant (no property) always fits.
- Order: each variant's best fitting value per feature, features in the provider's order
  (lower bound, upper bound, sm_arch), compared in turn (a higher lower bound first; for
  ``sm_arch`` X.Y_real first, down to X0_real, then X0_virtual); then more features first; then
  the label. Variants before the null variant, the null variant before the plain wheel.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

from cuship._record import frozen
from cuship.arch import variant_sm
from cuship.wheel.variant import NAMESPACE, NULL

__all__ = ["UvMachine", "fits", "uv_label"]

_FEATURES = ("cuda_version_lower_bound", "cuda_version_upper_bound", "sm_arch")


@frozen
class UvMachine:
    """What uv's NVIDIA provider detects: the driver's CUDA and the highest GPU."""

    cuda: tuple[int, int] | None  # the driver's CUDA version; None: no driver
    cc: tuple[int, int] | None  # the highest compute capability; None: no GPU

    @classmethod
    def of(cls, driver_cuda: str | None, gpus: Sequence[tuple[str, str | None]]) -> UvMachine:
        ccs = [_pair(cc) for _, cc in gpus if cc]
        found = [cc for cc in ccs if cc is not None]
        return cls(cuda=_pair(driver_cuda), cc=max(found) if found else None)


_PAIR = re.compile(r"([0-9]{1,3})(?:\.([0-9]{1,3}))?(?:\.[0-9]{1,4})?")


def _pair(text: str | None) -> tuple[int, int] | None:
    """(major, minor) of ``13.0``, ``13`` or ``12.8.1`` (ASCII digits only: ``"²"`` is none)."""
    match = _PAIR.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        return None
    return int(match[1]), int(match[2] or 0)


def _value_rank(feature: str, value: str, machine: UvMachine) -> int | None:
    """The rank of a fitting value (lower is better), None when it does not fit."""
    if machine.cuda is None:
        return None
    if feature == "cuda_version_lower_bound":
        bound = _pair(value)
        if bound is None or bound > machine.cuda:
            return None
        return -(bound[0] * 100 + bound[1])  # the highest bound first
    if feature == "cuda_version_upper_bound":
        bound = _pair(value)
        if bound is None or bound <= machine.cuda:
            return None
        return bound[0] * 100 + bound[1]
    return _sm_rank(value, machine.cc)


def _sm_rank(value: str, cc: tuple[int, int] | None) -> int | None:
    parts = variant_sm(value)
    if parts is None or cc is None:
        return None
    major, minor, kind = parts
    if major != cc[0]:
        return None
    if kind == "real":
        return cc[1] - minor if minor <= cc[1] else None
    return cc[1] + 1 if minor == 0 else None


def _ranks(entry: Mapping[str, Any], machine: UvMachine) -> tuple[tuple[int, int], ...] | None:
    """(feature index, best value rank) per feature of a fitting variant; None if it does
    not fit. Namespaces other than NVIDIA's make it unfit (uv knows no other provider)."""
    if any(namespace != NAMESPACE for namespace in entry):
        return None
    features = entry.get(NAMESPACE, {})
    found = []
    for index, feature in enumerate(_FEATURES):
        values = features.get(feature)
        if values is None:
            continue
        ranks = [r for v in values if (r := _value_rank(feature, str(v), machine)) is not None]
        if not ranks:
            return None
        found.append((index, min(ranks)))
    if any(feature not in _FEATURES for feature in features):
        return None
    return tuple(found)


def fits(entry: Mapping[str, Any], machine: UvMachine) -> bool:
    """Whether uv's NVIDIA provider finds the variant ``entry`` compatible with ``machine``."""
    return _ranks(entry, machine) is not None


def _compare(
    a: tuple[str, tuple[tuple[int, int], ...]], b: tuple[str, tuple[tuple[int, int], ...]]
) -> int:
    for left, right in zip(a[1], b[1], strict=False):
        if left != right:
            return -1 if left < right else 1
    if len(a[1]) != len(b[1]):
        return -1 if len(a[1]) > len(b[1]) else 1
    return -1 if a[0] < b[0] else (1 if a[0] > b[0] else 0)


def uv_label(variants: Mapping[str, Mapping[str, Any]], machine: UvMachine) -> str | None:
    """The variant label uv takes among ``variants`` (label -> properties) for ``machine``:
    the best fitting one, else the null variant when there is one, else None (the plain
    wheel)."""
    fitting = [
        (label, ranks)
        for label, entry in variants.items()
        if label != NULL and (ranks := _ranks(entry, machine)) is not None
    ]
    if fitting:
        return min(fitting, key=functools.cmp_to_key(_compare))[0]
    return NULL if NULL in variants else None
