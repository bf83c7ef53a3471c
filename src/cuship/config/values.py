"""Field validators shared by the config sections: each raises ``ValueError`` with the problem,
which :mod:`cuship.schema` turns into a :class:`~cuship.errors.ConfigError` naming
the file and key. A config file is input like any other: ranges are bounded, not just signed."""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Callable, Collection, Mapping

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from cuship import _names
from cuship._format import TemplateError, template_fields
from cuship.arch import parse_arch_list
from cuship.errors import CushipError, UsageError
from cuship.wheel.names import check_template

__all__ = [
    "BUILD_ENV_FIELDS",
    "IMAGE_FIELDS",
    "arch_list",
    "between",
    "build_env",
    "check_dtype",
    "floors",
    "glibc_floor",
    "image_template",
    "interpreter_path",
    "label_template",
    "memory_gib",
    "non_negative",
    "positive",
    "project_name",
    "python_version",
    "requirement",
    "shape",
    "shell_words",
    "specifier",
    "torch_index_template",
    "version",
]

# [build] image: what builder.container.image_for fills
IMAGE_FIELDS = ("cuda", "cuda_mm", "cuda_major", "python", "python_tag")
_PYTHON = re.compile(r"3\.(?:0|[1-9][0-9]?)")
PYTHON_MINORS = (6, 19)
"""The CPython 3 minors a config may name (3.19 leaves room for the releases to come)."""
GLIBC_MINORS = (5, 60)
"""The glibc 2 minors a manylinux floor may name (manylinux1 is 2_5)."""


def python_version(item: str) -> None:
    """A CPython version as the matrix and CI spell it: ``3.N``, N from 6 to 19."""
    low, high = PYTHON_MINORS
    if not _PYTHON.fullmatch(item):
        raise ValueError(f'{item!r} is not a Python version; write 3.MINOR, e.g. "3.12"')
    if not low <= int(item.partition(".")[2]) <= high:
        raise ValueError(f"{item!r} is no CPython release; write one from 3.{low} to 3.{high}")


def interpreter_path(item: str) -> None:
    """A path naming a python3.X executable (``~`` and relative paths allowed)."""
    if not item.strip():
        raise ValueError("an empty interpreter path; write the path of a python3.X executable")
    if len(item) > 4096 or "\0" in item:
        raise ValueError(f"{item[:80]!r}… is not a path (too long, or a NUL byte)")


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


def version(item: str) -> None:
    """A PEP 440 version (:func:`cuship._names.version`)."""
    try:
        _names.version(item)
    except UsageError:
        raise ValueError(f"{item[:60]!r} is not a version") from None


def arch_list(item: str) -> None:
    try:
        parse_arch_list(item)
    except CushipError as err:
        raise ValueError(err.message) from err


def specifier(value: str | None) -> None:
    if value is None:
        return
    try:
        SpecifierSet(value)
    except InvalidSpecifier as err:
        raise ValueError(f"{value!r} is not a version specifier such as '>=3.10'") from err


def glibc_floor(value: str | None) -> None:
    """[build] manylinux: a glibc floor written MAJOR_MINOR, e.g. "2_28"."""
    if value is None:
        return
    major, _, minor = value.partition("_")
    if not (major.isdigit() and minor.isdigit() and len(value) <= 8):
        raise ValueError(f'{value!r} is not a glibc floor; write it like "2_28"')
    low, high = GLIBC_MINORS
    if int(major) != 2 or not low <= int(minor) <= high:
        raise ValueError(f"{value!r} is no glibc release; write one from 2_{low} to 2_{high}")


def memory_gib(value: float) -> None:
    """Memory per nvcc thread: more than 0, at most 1 TiB."""
    if not 0 < value <= 1024:
        raise ValueError(f"must be more than 0 and at most 1024 GiB, got {value!r}")


_CHECK_DTYPES = ("float16", "bfloat16", "float32", "float64", "int32", "int64")


def check_dtype(item: str) -> None:
    if item not in _CHECK_DTYPES:
        raise ValueError(f"{item!r} is not one of {', '.join(_CHECK_DTYPES)}")


_MAX_DIM = 1 << 31


def shape(value: Mapping[str, int]) -> None:
    """Dimension sizes of one check shape: 0 to 2**31 - 1."""
    for name, size in value.items():
        if not 0 <= size < _MAX_DIM:
            raise ValueError(f"{name} = {size!r}: a dimension size is 0 to {_MAX_DIM - 1:,}")


_FLOOR_UNITS = ("ops/s", "GB/s", "TFLOP/s")


def floors(table: Mapping[str, str]) -> None:
    """Throughput floors: a positive finite number and a unit."""
    for name, value in table.items():
        number, _, unit = value.strip().partition(" ")
        try:
            parsed = float(number)
        except ValueError:
            parsed = -1.0
        if unit.strip() not in _FLOOR_UNITS or not 0 < parsed < math.inf:
            raise ValueError(
                f"{name} = {value!r} is not a floor: write a positive number and one of "
                f'{", ".join(_FLOOR_UNITS)}, e.g. "5000 ops/s" or "900 GB/s"'
            )


def shell_words(value: str) -> None:
    try:
        shlex.split(value)
    except ValueError as err:
        raise ValueError(f"{value[:60]!r} is not shell words ({err})") from None


def requirement(item: str) -> None:
    """A PEP 508 requirement, never a pip option or a path (:func:`cuship._names.requirement`)."""
    try:
        _names.requirement(item)
    except UsageError as err:
        raise ValueError(err.message) from None


def project_name(value: str) -> None:
    """A PEP 508 project name (:func:`cuship._names.project`)."""
    try:
        _names.project(value)
    except UsageError:
        raise ValueError(f"{value[:60]!r} is not a valid project name") from None


BUILD_ENV_FIELDS = ("python", "cuda", "cuda_major", "torch", "arch", "label")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
# what cuship sets from [matrix] and [build] itself: a [build] env entry would fight it
_SET_BY_CUSHIP = frozenset(
    {
        "TORCH_CUDA_ARCH_LIST",
        "CUDAARCHS",
        "CUDA_HOME",
        "CUDA_PATH",
        "CUDACXX",
        "PYTORCH_NVCC",
        "MAX_JOBS",
        "TMPDIR",
        "CMAKE_ARGS",
    }
)


def build_env(table: Mapping[str, str]) -> None:
    """Environment names a shell accepts, string values naming only the job's fields, and none
    of the variables cuship derives from the matrix."""
    for name, value in table.items():
        if not _ENV_NAME.fullmatch(name):
            raise ValueError(f"{name[:60]!r} is not an environment variable name")
        if name in _SET_BY_CUSHIP or name.startswith("CUSHIP_"):
            raise ValueError(
                f"{name} is set by cuship from the config ([matrix] arch, [build] max_jobs, "
                "the job's toolkit); set those instead"
            )
        if not isinstance(value, str) or len(value) > 4096 or "\0" in value:
            raise ValueError(f"{name}: a value is a string of at most 4096 characters")
        _template(value, BUILD_ENV_FIELDS, f"[build] env {name}")
