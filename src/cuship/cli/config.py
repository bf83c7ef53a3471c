"""``cuship config``: the configuration as cuship read it, or its JSON Schema."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import click

from cuship.cli._common import make_console
from cuship.config import json_schema, load_config, package_configs, packages_json_schema


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, Path):
        return str(value)
    return value


@click.command("config")
@click.argument("path", type=click.Path(path_type=Path), default=".")
@click.option("--schema", is_flag=True, help="Print the JSON Schema of cuship.toml (for editors).")
@click.option(
    "--packages-schema", is_flag=True, help="Print the JSON Schema of config/packages.yml."
)
def command(path: Path, schema: bool, packages_schema: bool) -> None:
    """Print the configuration of PATH as cuship reads it (JSON), or a schema. A packages.yml
    is shown expanded too: under "builds", each package version as it is built (its matrix,
    build settings and environment after its own keys are applied)."""
    console = make_console()
    if schema or packages_schema:
        console.print_json(packages_json_schema() if packages_schema else json_schema())
        return
    config = load_config(path)
    shown = _plain(config)
    if config.packages:
        shown["builds"] = [
            {
                "requirement": each.requirement,
                "matrix": _plain(each.matrix),
                "build": _plain(each.build),
            }
            for each in package_configs(config)
        ]
    console.print_json(shown)
