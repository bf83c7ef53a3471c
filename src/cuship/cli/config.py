"""``cuship config``: the configuration as cuship read it, or its JSON Schema."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import click

from cuship.cli._common import make_console
from cuship.config import json_schema, load_config


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
def command(path: Path, schema: bool) -> None:
    """Print the configuration of PATH as cuship reads it (JSON), or the schema."""
    console = make_console()
    if schema:
        console.print_json(json_schema())
        return
    console.print_json(_plain(load_config(path)))
