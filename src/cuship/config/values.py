"""Field validators shared by the config sections: each raises ``ValueError`` with the problem,
which :mod:`cuship.config.typedload` turns into a :class:`~cuship.errors.ConfigError` naming
the file and key. A config file is input like any other: ranges are bounded, not just signed."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection

from cuship._format import TemplateError, template_fields
from cuship.wheel.names import check_template

__all__ = [
    "IMAGE_FIELDS",
    "between",
    "image_template",
    "label_template",
    "non_negative",
    "positive",
    "python_version",
    "torch_index_template",
]

# [build] image: what builder.container.image_for fills
IMAGE_FIELDS = ("cuda", "cuda_mm", "cuda_major", "python", "python_tag")
_PYTHON = re.compile(r"3\.(?:0|[1-9][0-9]?)")


def python_version(item: str) -> None:
    """A CPython version as the matrix and CI spell it: ``3.N`` (N up to 99)."""
    if not _PYTHON.fullmatch(item):
        raise ValueError(f'{item!r} is not a Python version; write 3.MINOR, e.g. "3.12"')


def positive(value: float | int | None) -> None:
    if value is not None and value <= 0:
        raise ValueError(f"must be positive, got {value!r}")


def non_negative(value: float | int | None) -> None:
    if value is not None and value < 0:
        raise ValueError(f"must be zero or more, got {value!r}")


def between(low: float, high: float) -> Callable[[float | int | None], None]:
    """A validator for ``low <= value <= high`` (``None`` passes: the default applies)."""

    def check(value: float | int | None) -> None:
        if value is not None and not low <= value <= high:
            raise ValueError(f"must be between {low:,} and {high:,}, got {value!r}")

    return check


def _template(value: str | None, fields: Collection[str], what: str) -> None:
    if value is None:
        return
    try:
        template_fields(value, fields, what=what)
    except TemplateError as err:
        raise ValueError(str(err)) from err


def label_template(value: str | None) -> None:
    """Only the documented label fields, and what it writes must be a valid local label."""
    if value is not None:
        check_template(value)


def image_template(value: str) -> None:
    _template(value, IMAGE_FIELDS, "image template")


def torch_index_template(value: str) -> None:
    _template(value, ("variant",), "torch index template")
