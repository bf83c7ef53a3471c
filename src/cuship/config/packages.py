"""A community index's ``config/packages.yml``: third-party packages built from their PyPI sdists.

The file's shape::

    matrix:                 # every package's matrix (cuship.toml's [matrix] keys)
      python: ["3.11", "3.12"]
      cuda: ["13.0"]
    packages:
      torchsort:
        versions: ["0.1.9"]
        build_args: "--no-build-isolation"
        extra_deps: ["torch==2.13.0"]
        test_import: torchsort
        description: Fast differentiable sorting and ranking
        matrix: {torch: ["2.13"], arch: ["8.0;9.0;12.0+PTX"]}
      bottleneck:
        versions: ["1.5.0"]
        matrix: {device_code: false}   # plain C: one +cpu wheel per Python

A package's own ``matrix`` replaces only the keys it names; its ``env`` adds to ``[build] env``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from packaging.utils import InvalidName, canonicalize_name

from cuship import schema as typed
from cuship._record import frozen
from cuship.config import files, values
from cuship.errors import ConfigError
from cuship.schema import field_doc

__all__ = ["PackageMatrix", "PackageSpec", "PackagesFile", "load_packages", "packages_schema"]


def _given(check: Callable[[Any], None]) -> Callable[[Any], None]:
    """``check`` for a key that may be written as null (meaning: the file's value)."""

    def run(item: Any) -> None:
        if item is not None:
            check(item)

    return run


@frozen
class PackageMatrix:
    """The [matrix] keys one package sets for itself; a key left out keeps the file's value."""

    python: tuple[str, ...] | None = field_doc(
        "Its CPython versions.", default=None, validate=_given(values.python_version)
    )
    cuda: tuple[str, ...] | None = field_doc(
        "Its CUDA toolkits.", default=None, validate=_given(values.version)
    )
    torch: tuple[str, ...] | None = field_doc(
        "Its torch minor versions ([] for none).", default=None, validate=_given(values.version)
    )
    arch: tuple[str, ...] | None = field_doc(
        "Its architecture lists.", default=None, validate=_given(values.arch_list)
    )
    cxx11abi: tuple[bool, ...] | None = field_doc("Its C++ ABIs.", default=None)
    device_code: bool | None = field_doc(
        "false: it compiles no CUDA device code (one +cpu wheel per Python).", default=None
    )

    def given(self) -> dict[str, Any]:
        """The keys this package sets, by name."""
        return {
            f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None
        }


@frozen
class PackageSpec:
    """One entry of a community index's ``config/packages.yml``."""

    name: str
    versions: tuple[str, ...] = field_doc(
        "Versions to build from PyPI sdists.", validate=values.version
    )
    build_args: str = field_doc("Arguments for pip wheel.", default="", validate=values.shell_words)
    extra_deps: tuple[str, ...] = field_doc(
        "Installed before building (PEP 508 requirements; no pip option, no path).",
        default=(),
        validate=values.requirement,
    )
    test_import: str | None = field_doc("Module imported by the smoke test.", default=None)
    description: str = field_doc("Shown on its index page.", default="")
    env: Mapping[str, str] = field_doc(
        "Environment of its builds, over [build] env (same {python}, {cuda}, ... fields).",
        default_factory=dict,
        validate=values.build_env,
    )
    matrix: PackageMatrix = field_doc(
        "Its own matrix keys, over the file's.", default_factory=PackageMatrix
    )


@frozen
class PackagesFile:
    """config/packages.yml: the packages a community index builds, and their common matrix."""

    matrix: Mapping[str, Any] = field_doc(
        "The [matrix] of every package (cuship.toml's [matrix] keys; `cuship config --schema` "
        "describes them).",
        default_factory=dict,
    )
    packages: Mapping[str, Any] = field_doc(
        "Each package by its PyPI name: a table of PackageSpec keys."
    )


def load_packages(path: Path) -> tuple[Mapping[str, Any], tuple[PackageSpec, ...]]:
    """(the file's own matrix table, its packages) of the packages.yml at ``path``."""
    raw = files.read_yaml(path)
    top = typed.load(PackagesFile, raw if raw is not None else {}, source=str(path))
    specs = []
    for name, entry in top.packages.items():
        try:
            canonicalize_name(str(name), validate=True)
        except InvalidName as err:
            raise ConfigError(str(path), f"packages.{name}", "not a valid package name") from err
        if not isinstance(entry, Mapping):
            raise ConfigError(str(path), f"packages.{name}", f"expected a table, got {entry!r}")
        if "name" in entry:  # the key is the name: the one that was validated above
            raise ConfigError(
                str(path),
                f"packages.{name}.name",
                f"{entry['name']!r}: a package's name is its key under packages",
                hint=f"remove `name:` from packages.{name}, or rename the key",
            )
        specs.append(
            typed.load(
                PackageSpec, {**entry, "name": name}, source=str(path), key=f"packages.{name}"
            )
        )
    return top.matrix, tuple(specs)


def packages_schema(matrix: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema of packages.yml; ``matrix``: the schema of cuship.toml's [matrix]."""
    spec = typed.schema(PackageSpec)
    spec["properties"].pop("name", None)
    spec["required"] = [r for r in spec.get("required", []) if r != "name"]
    doc = typed.schema(PackagesFile)
    doc["properties"]["matrix"] = {
        **matrix,
        "description": doc["properties"]["matrix"].get("description", ""),
    }
    doc["properties"]["packages"] = {
        "type": "object",
        "description": doc["properties"]["packages"].get("description", ""),
        "additionalProperties": spec,
    }
    doc["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    doc["$id"] = "https://cuship.dev/schema/packages.schema.json"
    doc["title"] = "config/packages.yml"
    return doc
