"""Local version labels such as ``+cu128torch2.8`` or ``+cu12torch2.8cxx11abiTRUE``.

A label is written from a template and read back with a pattern derived from the same template,
so a project that chooses its own spelling can still be parsed. Validity is decided by
``packaging``: a label is whatever ``Version("0+" + label)`` accepts. A template holds only
plain ``{field}`` placeholders of the fields below (:func:`check_template`, run when the config
is read): no conversion, format spec, index or attribute.
"""

from __future__ import annotations

import functools
import re

from packaging.version import InvalidVersion, Version

from cuship import _names
from cuship._format import TemplateError, template_fields
from cuship._record import frozen
from cuship.errors import UsageError

__all__ = [
    "DEFAULT_TEMPLATE",
    "FIELDS",
    "Variant",
    "check_template",
    "default_template",
    "format_label",
    "label_of",
    "parse_label",
    "with_label",
]

DEFAULT_TEMPLATE = "cu{cuda_short}torch{torch}cxx11abi{abi}"

# field -> regex for one value; every field the templates may use
_FIELDS = {
    "cuda": r"\d+\.\d+(?:\.\d+)?",
    "cuda_mm": r"\d+\.\d+",
    "cuda_short": r"\d{3,4}|\d{2}",
    "cuda_major": r"\d+",
    "torch": r"\d+\.\d+",
    "torch_short": r"\d{2,3}",
    "abi": r"true|false",
}
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
FIELDS = tuple(_FIELDS)
_MAX_LABEL_TEMPLATE = 200


@frozen
class Variant:
    """What a label says: the CUDA and torch a wheel was built for, and the C++ ABI."""

    cuda: Version | None = None
    torch: Version | None = None
    cxx11abi: bool | None = None

    @property
    def cuda_variant(self) -> str | None:
        """``cu128`` for CUDA 12.8 (as the PyTorch index spells it)."""
        if self.cuda is None:
            return None
        return f"cu{self.cuda.major}{self.cuda.minor}"


CPU_LABEL = "cpu"
"""The label of a wheel without CUDA device code."""


def default_template(*, torch: bool, abi: bool, cuda: bool = True) -> str:
    """The template cuship uses when the config gives none (``cuda`` False: a package with no
    device code, labelled ``cpu``)."""
    template = "cu{cuda_short}" if cuda else CPU_LABEL
    if torch:
        template += "torch{torch}"
    if abi:
        template += "cxx11abi{abi}"
    return template


def _values(variant: Variant) -> dict[str, str]:
    values: dict[str, str] = {}
    if variant.cuda is not None:
        cuda = variant.cuda
        values |= {
            "cuda": str(cuda),
            "cuda_mm": f"{cuda.major}.{cuda.minor}",
            "cuda_short": f"{cuda.major}{cuda.minor}",
            "cuda_major": str(cuda.major),
        }
    if variant.torch is not None:
        values |= {
            "torch": f"{variant.torch.major}.{variant.torch.minor}",
            "torch_short": f"{variant.torch.major}{variant.torch.minor}",
        }
    if variant.cxx11abi is not None:
        values["abi"] = "TRUE" if variant.cxx11abi else "FALSE"
    return values


_SAMPLE = Variant(cuda=Version("12.8.1"), torch=Version("2.8"), cxx11abi=True)


def check_template(template: str) -> tuple[str, ...]:
    """The fields of a label template; :class:`~cuship._format.TemplateError` (a ValueError)
    when it uses anything but plain ``{field}`` placeholders of :data:`FIELDS`, or when the
    labels it writes are not valid local version labels."""
    if len(template) > _MAX_LABEL_TEMPLATE:
        raise TemplateError(
            f"label template is {len(template):,} characters; at most {_MAX_LABEL_TEMPLATE}"
        )
    fields = template_fields(template, FIELDS, what="label template")
    label = template.format(**_values(_SAMPLE))
    try:
        _names.local_label(label)
    except UsageError:
        raise TemplateError(
            f"label template {template!r} writes labels such as {label!r}, which are not valid "
            "local version labels; use letters, digits and '.' around the fields"
        ) from None
    return fields


def format_label(variant: Variant, template: str) -> str:
    """Fill ``template`` from ``variant``; the result must be a valid PEP 440 local label."""
    try:
        fields = template_fields(template, FIELDS, what="label template")
    except TemplateError as err:
        raise UsageError(str(err), hint="set [label] template to plain {field} names") from None
    values = _values(variant)
    missing = [name for name in fields if name not in values]
    if missing:
        raise UsageError(
            f"label template {template!r} needs {{{missing[0]}}}, which this job lacks"
        )
    label = template.format(**values)
    try:
        _names.local_label(label)
    except UsageError as err:
        raise UsageError(
            f"label {label!r} (from template {template!r}) is not a valid local version label",
            hint="use letters, digits and '.' only",
        ) from err
    return label


@functools.lru_cache(maxsize=64)
def _pattern(template: str) -> re.Pattern[str]:
    parts = []
    pos = 0
    for match in _PLACEHOLDER.finditer(template):
        parts.append(re.escape(template[pos : match.start()]))
        name = match[1]
        if name not in _FIELDS:
            raise UsageError(f"label template {template!r} uses unknown field {name!r}")
        parts.append(f"(?P<{name}>{_FIELDS[name]})")
        pos = match.end()
    parts.append(re.escape(template[pos:]))
    return re.compile("".join(parts), re.IGNORECASE)


def _cuda_from_short(short: str) -> Version:
    # "118" -> 11.8, "128" -> 12.8, "1210" -> 12.10, "12" -> 12
    if len(short) == 2:
        return Version(short)
    major_len = 1 if short.startswith("9") else 2
    return Version(f"{short[:major_len]}.{short[major_len:]}")


@functools.lru_cache(maxsize=4096)  # an index parses the same few labels per wheel
def parse_label(label: str, template: str = DEFAULT_TEMPLATE) -> Variant:
    """Read a label written with ``template``; parts absent from the label stay ``None``.

    With the default template, any of its trailing parts may be missing: ``cu128``,
    ``cu128torch2.8`` and ``cu128torch2.8cxx11abiTRUE`` all parse.
    """
    text = label.lstrip("+")
    match = _pattern(template).fullmatch(text)
    if match is None and template == DEFAULT_TEMPLATE:
        for shorter in (
            default_template(torch=True, abi=False),
            default_template(torch=False, abi=False),
        ):
            match = _pattern(shorter).fullmatch(text)
            if match is not None:
                break
    if match is None:
        raise UsageError(
            f"local label {label!r} does not match template {template!r}",
            hint="labels look like 'cu128torch2.8'; set [label] template to your spelling",
        )
    found = match.groupdict()
    cuda: Version | None = None
    if found.get("cuda") or found.get("cuda_mm"):
        cuda = Version(found.get("cuda") or found["cuda_mm"])
    elif found.get("cuda_short"):
        cuda = _cuda_from_short(found["cuda_short"])
    elif found.get("cuda_major"):
        cuda = Version(found["cuda_major"])
    torch: Version | None = None
    if found.get("torch"):
        torch = Version(found["torch"])
    elif found.get("torch_short"):
        torch = Version(f"{found['torch_short'][0]}.{found['torch_short'][1:]}")
    abi = found.get("abi")
    return Variant(cuda=cuda, torch=torch, cxx11abi=None if abi is None else abi.lower() == "true")


def label_of(version: str | Version) -> str | None:
    """The local label of a version (``None`` when it has none), as packaging normalises it."""
    try:
        return Version(str(version)).local
    except InvalidVersion as err:
        raise UsageError(f"not a version: {str(version)!r}") from err


def with_label(version: str | Version, label: str) -> Version:
    """``0.1.0`` + ``cu128torch2.8`` → ``0.1.0+cu128torch2.8`` (replacing any label present)."""
    base = Version(str(version))
    return Version(f"{base.public}+{label}")
