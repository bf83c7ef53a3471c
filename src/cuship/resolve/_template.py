"""Fill a prebuilt-wheel URL template (flash-attn style) from what this machine has (pure).

``{cuda}`` is the CUDA the installed torch was built for, as torch's own files say; the driver
only stands in where no torch is installed (the wheel must match torch's CUDA, not the driver's).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from packaging.utils import canonicalize_name
from packaging.version import Version

from cuship._format import TemplateError, template_fields
from cuship.errors import UsageError
from cuship.resolve.select import Target

__all__ = ["FIELDS", "format_url", "template_values"]

FIELDS = (
    "name",
    "dist",
    "version",
    "cuda",
    "cuda_major",
    "cuda_short",
    "torch",
    "cxx11abi",
    "python_tag",
    "platform",
)


def template_values(
    *, name: str, version: str | None, target: Target, machine_platform: str
) -> dict[str, str]:
    """The placeholder values this machine can fill (absent ones are left out)."""
    values = {
        "name": name,
        "dist": canonicalize_name(name).replace("-", "_"),
        "platform": re.sub(r"[-.]", "_", machine_platform),
    }
    if version:
        values["version"] = version
    python = next((t.split("-")[0] for t in target.tags if t.startswith("cp")), None)
    if python:
        values["python_tag"] = python
    cuda = _cuda(target)
    if cuda is not None:
        values |= {
            "cuda": f"{cuda.major}.{cuda.minor}",
            "cuda_major": str(cuda.major),
            "cuda_short": f"{cuda.major}{cuda.minor}",
        }
    torch = target.offer.torch
    if torch is not None and torch.version:
        release = Version(torch.version)
        values["torch"] = f"{release.major}.{release.minor}"
    if torch is not None and torch.cxx11abi is not None:
        values["cxx11abi"] = "TRUE" if torch.cxx11abi else "FALSE"
    return values


def _cuda(target: Target) -> Version | None:
    """torch's CUDA when torch is a CUDA build (read from its files: PyPI's CUDA 13 torch is
    ``2.13.0``, no ``+cu130``), else its label's, else the driver's; None for a CPU torch,
    whose extensions must not be a CUDA build's."""
    torch, driver = target.offer.torch, target.offer.driver_cuda
    if torch is not None and torch.flavour == "cuda" and torch.cuda:
        return Version(torch.cuda)
    if torch is not None and torch.version:
        local = Version(torch.version).local or ""
        match = re.fullmatch(r"cu(\d+)(\d)", local)
        if match:
            return Version(f"{match[1]}.{match[2]}")
        if torch.flavour == "cpu" or local == "cpu":
            return None
    return Version(driver) if driver else None


def format_url(template: str, values: Mapping[str, str]) -> str | None:
    """The URL, or None when it needs a value the machine lacks; anything but plain ``{field}``
    placeholders of :data:`FIELDS` (an unknown name, a conversion, a format spec, an index or an
    attribute) is a :class:`UsageError`."""
    try:
        wanted = template_fields(template, FIELDS, what="url template")
    except TemplateError as err:
        raise UsageError(
            str(err), hint="[tool.cuship.prebuilt] url takes plain {field} placeholders"
        ) from None
    if any(f not in values for f in wanted):
        return None
    return template.format(**{f: values[f] for f in wanted})
