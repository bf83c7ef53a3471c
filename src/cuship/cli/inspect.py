"""`cuship inspect WHEEL|SO`: SASS/PTX arches, compression, needed and bundled libraries, tags,
and the torch ABI (none / stable / exact) with the torch a wheel was built against."""

from __future__ import annotations

from pathlib import Path

import click

from cuship._format import size_text
from cuship.cli._common import json_option, make_console
from cuship.cli._console import Console
from cuship.wheel.audit import ObjectReport, WheelReport, inspect_path


@click.command("inspect")
@click.argument("target", type=click.Path(path_type=Path))
@json_option
def command(target: Path, as_json: bool) -> None:
    """Show what device code and libraries a wheel or shared object carries."""
    console = make_console()
    report = inspect_path(target)
    if as_json:
        console.print_json(report.to_json())
    elif isinstance(report, WheelReport):
        _render_wheel(console, report)
    else:
        _render_objects(console, (report,))


def _render_wheel(console: Console, report: WheelReport) -> None:
    console.print_text(
        f"{report.filename}  ({size_text(report.size)})\n"
        f"  name {report.name}  version {report.version}  local {report.local or '-'}\n"
        f"  tags {', '.join(report.tags)}\n"
        f"  SASS {_join(report.sass)}   PTX {_join(report.ptx)}   (its own objects, as the runtime "
        "loads them)\n"
        f"  bundled libraries: {_join(report.bundled_libs)}\n"
        f"  bundled CUDA/torch libraries: {_join(report.bundled_cuda_libs)}\n"
        f"  torch ABI {report.torch_abi}   {_torch_line(report)}"
    )
    _render_objects(console, report.extensions)


def _torch_line(report: WheelReport) -> str:
    pin = report.torch_requirement
    requires = f"requires {pin.requirement}" if pin is not None else "no torch requirement"
    if report.torch_built is None:
        return f"{requires}; built against: unknown"
    source = "local label" if report.torch_label else "Requires-Dist"
    return f"{requires}; built against torch {report.torch_built} (from the {source})"


def _render_objects(console: Console, objects: tuple[ObjectReport, ...]) -> None:
    from rich.table import Table

    table = Table(show_lines=False)
    columns = (
        "shared object",
        "role",
        "size",
        "SASS",
        "PTX",
        "PTX zstd/lz4",
        "torch ABI",
        "needed",
    )
    for column in columns:
        table.add_column(column)
    for obj in objects:
        table.add_row(
            obj.path,
            obj.role,
            size_text(obj.size),
            _join(obj.sass),
            _join(obj.ptx) + (f" (LTO {_join(obj.lto)})" if obj.lto else ""),
            "yes" if obj.ptx_compressed else "no",
            obj.torch_abi,
            ", ".join(obj.needed),
        )
    console.out.print(table)
    reasons = [f"{obj.path}: torch ABI {obj.torch_abi}: {obj.torch.reason}" for obj in objects]
    reasons += [
        f"{obj.path}: relocatable device code, never loaded by the runtime: "
        f"{_join(obj.relocatable)}"
        for obj in objects
        if obj.relocatable
    ]
    console.print_text("\n".join(reasons))


def _join(items: tuple[str, ...]) -> str:
    return " ".join(items) if items else "-"
