"""What a GPU marker asks for: ``gpu(count=2, min_cc="8.0", ...)`` and the card shorthands.

Pure parsing, no pytest import: :func:`parse_marker` turns a marker's name, positional and
keyword arguments into a :class:`GpuRequirement`, or raises :class:`~cuship.errors.UsageError`
quoting the bad value. Card names are resolved through the compatibility data (a callable that
maps a name to a :class:`~cuship.compat.GpuModel` or raises), never by string guessing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from cuship.arch import is_cc
from cuship.errors import UsageError

if TYPE_CHECKING:
    from cuship.compat import GpuModel

__all__ = [
    "GPU_MARKER",
    "KEYWORDS",
    "SHORTHAND_MARKERS",
    "GpuRequirement",
    "article",
    "describe",
    "format_gib",
    "gpu_conditions",
    "marker_text",
    "parse_marker",
]

GPU_MARKER = "gpu"
# Marker name → the card name looked up in cuship/data/gpus.toml.
SHORTHAND_MARKERS: Mapping[str, str] = {
    "h100": "H100",
    "h200": "H200",
    "a100": "A100",
    "b200": "B200",
    "l4": "L4",
}
KEYWORDS = ("count", "min_cc", "cc", "memory", "cuda", "name")

_MEMORY = re.compile(r"^(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>[KMGT])i?B$", re.IGNORECASE)
_UNIT_MIB = {"K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0 * 1024}

ModelLookup = Callable[[str], "GpuModel"]


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuRequirement:
    """One marker's demand. Every per-GPU condition must hold on ``count`` GPUs at once."""

    marker: str
    count: int = 1
    min_cc: str | None = None
    cc: tuple[str, ...] = ()
    memory_mib: int | None = None
    cuda: SpecifierSet | None = None
    names: tuple[str, ...] = ()


def marker_text(name: str, args: Sequence[object], kwargs: Mapping[str, object]) -> str:
    """The marker as the user wrote it: ``gpu(min_cc='nine')``."""
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return f"{name}({', '.join(parts)})" if parts else name


def parse_marker(
    name: str,
    args: Sequence[object],
    kwargs: Mapping[str, object],
    *,
    model: ModelLookup,
) -> GpuRequirement:
    """Check a ``gpu`` or shorthand marker and say what it needs.

    ``model`` maps a card name to its :class:`GpuModel` and raises ``UsageError`` for an
    unknown one (``cuship.compat.load().gpu``).
    """
    text = marker_text(name, args, kwargs)
    if args:
        raise UsageError(
            f"@pytest.mark.{text}: positional arguments are not accepted",
            hint=f"use keywords: {', '.join(KEYWORDS)}",
        )
    unknown = [k for k in kwargs if k not in KEYWORDS]
    if unknown:
        raise UsageError(
            f"@pytest.mark.{text}: unknown keyword {unknown[0]!r}",
            hint=f"the gpu markers take {', '.join(KEYWORDS)}",
        )
    names = _names(text, name, kwargs.get("name"), model)
    try:
        return GpuRequirement(
            marker=text,
            count=_count(kwargs.get("count", 1)),
            min_cc=None if kwargs.get("min_cc") is None else _cc(kwargs["min_cc"], "min_cc"),
            cc=_cc_list(kwargs.get("cc")),
            memory_mib=_memory(kwargs.get("memory")),
            cuda=_cuda(kwargs.get("cuda")),
            names=names,
        )
    except UsageError as err:
        raise UsageError(f"@pytest.mark.{text}: {err.message}", hint=err.hint) from err


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(
            f"count {value!r} is not a number of GPUs", hint="write a whole number >= 1: count=2"
        )
    return value


def _cc(value: object, key: str) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = f"{float(value):.1f}"
    if not isinstance(value, str) or not is_cc(value.strip()):
        raise UsageError(
            f"{key} {value!r} is not a compute capability",
            hint=f'write it as MAJOR.MINOR, e.g. {key}="8.0"',
        )
    return value.strip()


def _cc_list(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    items = [value] if isinstance(value, (str, int, float)) else value
    if not isinstance(items, (list, tuple)) or not items:
        raise UsageError(
            f"cc {value!r} is not a compute capability or a list of them",
            hint='e.g. cc="9.0" or cc=["9.0", "10.0"]',
        )
    return tuple(_cc(item, "cc") for item in items)


def _memory(value: object) -> int | None:
    if value is None:
        return None
    match = _MEMORY.match(value.strip()) if isinstance(value, str) else None
    if match is None:
        raise UsageError(
            f"memory {value!r} is not a size with a unit",
            hint='write e.g. memory="40GiB" (GB and GiB both mean GiB here)',
        )
    mib = float(match["n"]) * _UNIT_MIB[match["unit"].upper()]
    if mib <= 0:
        raise UsageError(f"memory {value!r} is not a positive size", hint='e.g. memory="40GiB"')
    return round(mib)


def _cuda(value: object) -> SpecifierSet | None:
    if value is None:
        return None
    hint = 'write a version specifier, e.g. cuda=">=12.4" or cuda=">=12.4,<14"'
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"cuda {value!r} is not a version specifier", hint=hint)
    try:
        spec = SpecifierSet(value)
    except InvalidSpecifier as err:
        raise UsageError(f"cuda {value!r} is not a version specifier", hint=hint) from err
    if not len(spec):
        raise UsageError(f"cuda {value!r} is not a version specifier", hint=hint)
    return spec


def _names(text: str, marker: str, value: object, model: ModelLookup) -> tuple[str, ...]:
    card = SHORTHAND_MARKERS.get(marker)
    if card is not None and value is not None:
        raise UsageError(
            f"@pytest.mark.{text}: the {marker} marker already names the card",
            hint=f"drop name=, or use @pytest.mark.gpu(name={value!r})",
        )
    if card is not None:
        return (card,)  # a name as cuship/data/gpus.toml spells it (a unit test checks)
    wanted = [value] if isinstance(value, str) else value
    if wanted is None:
        return ()
    if not isinstance(wanted, (list, tuple)) or not wanted:
        raise UsageError(
            f"@pytest.mark.{text}: name {value!r} is not a card name or a list of them",
            hint='e.g. name="H100" or name=["H100", "H200"]',
        )
    found = []
    for item in wanted:
        if not isinstance(item, str):
            raise UsageError(
                f"@pytest.mark.{text}: name {item!r} is not a card name", hint='e.g. name="H100"'
            )
        try:
            found.append(model(item).name)
        except UsageError as err:
            raise UsageError(f"@pytest.mark.{text}: {err.message}", hint=err.hint) from err
    return tuple(dict.fromkeys(found))


def describe(req: GpuRequirement) -> str:
    """What ``req`` asks for, in words: ``2 GPUs with compute capability ≥ 9.0``."""
    if req.names:
        cards = " or ".join(req.names)
        subject = (
            f"{article(req.names[0])} {cards}" if req.count == 1 else f"{req.count} {cards} GPUs"
        )
    else:
        subject = "a GPU" if req.count == 1 else f"{req.count} GPUs"
    conditions = gpu_conditions(req)[1 if req.names else 0 :]
    text = f"{subject} with {' and '.join(conditions)}" if conditions else subject
    if req.cuda is not None:
        text += f" and a driver supporting CUDA {req.cuda}"
    return text


def article(name: str) -> str:
    """``"an"`` before names read with a leading vowel sound (an H100, an L4, a B200)."""
    return "an" if name[:1].upper() in "AEFHILMNORSX" else "a"


def gpu_conditions(req: GpuRequirement) -> list[str]:
    """The per-GPU conditions of ``req`` as phrases, the card names first."""
    found = []
    if req.names:
        found.append(f"model {' or '.join(req.names)}")
    if req.min_cc is not None:
        found.append(f"compute capability ≥ {req.min_cc}")
    if req.cc:
        found.append(f"compute capability {' or '.join(req.cc)}")
    if req.memory_mib is not None:
        found.append(f"≥ {format_gib(req.memory_mib)} memory")
    return found


def format_gib(mib: float) -> str:
    """``40960`` → ``"40 GiB"``; ``23034`` → ``"22.5 GiB"``."""
    gib = round(mib / 1024, 1)
    return f"{gib:g} GiB"
