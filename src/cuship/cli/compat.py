"""``cuship compat``: show the compatibility knowledge cuship decides with."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from cuship.cli._common import json_option, make_console

if TYPE_CHECKING:
    from rich.table import Table

    from cuship.compat import Compat

__all__ = ["command"]


def _cuda_table(data: Compat) -> Table:
    from rich.table import Table

    from cuship.compat import format_driver

    table = Table(title="CUDA toolkits (Linux x86_64)", title_justify="left")
    for column in ("version", "released", "min driver", "minor-compat driver", "SASS targets"):
        table.add_column(column, no_wrap=column != "SASS targets")
    table.add_column("dropped")
    for t in data.toolkits:
        table.add_row(
            str(t.version),
            t.released,
            format_driver(t.min_driver_linux),
            format_driver(t.family_min_driver_linux),
            " ".join(t.sms),
            " ".join(t.dropped),
        )
    return table


def _torch_table(data: Compat) -> Table:
    from rich.table import Table

    table = Table(title="torch releases (Linux x86_64 wheels)", title_justify="left")
    for column in ("torch", "latest", "released", "CUDA variants", "PyPI CUDA", "Python", "ABI"):
        table.add_column(column)
    for r in data.torch:
        abi = "both" if len(set(r.cxx11_abi)) > 1 else ("cxx11" if r.cxx11_abi[0] else "pre-cxx11")
        pythons = f"{r.pythons[0]}-{r.pythons[-1]}"
        table.add_row(
            r.minor, str(r.latest), r.released, " ".join(r.variants), r.pypi_cuda, pythons, abi
        )
    return table


def _gpu_table(data: Compat) -> Table:
    from rich.table import Table

    table = Table(title="GPU models", title_justify="left")
    for column in ("GPU", "CC", "architecture", "memory (GiB)", "also reported as"):
        table.add_column(column)
    for g in data.gpus:
        memory = ", ".join(str(m) for m in g.memory_gib)
        table.add_row(g.name, g.cc, g.arch_family, memory, "; ".join(g.aliases))
    return table


@click.command("compat")
@json_option
@click.option("--cuda", "show_cuda", is_flag=True, help="CUDA toolkits: drivers and SASS targets.")
@click.option("--torch", "show_torch", is_flag=True, help="torch releases and their wheels.")
@click.option("--gpus", "show_gpus", is_flag=True, help="GPU models and compute capabilities.")
@click.option(
    "--refresh",
    is_flag=True,
    help="Hold the torch releases to a package index and say what the data lacks.",
)
@click.option(
    "--index",
    default="https://pypi.org/simple/",
    show_default=True,
    help="The PEP 691 index --refresh reads torch's releases from.",
)
@click.option(
    "--write",
    type=click.Path(dir_okay=False, writable=True),
    help="With --refresh: write torch.toml with the missing rows added to this file.",
)
def command(
    as_json: bool,
    show_cuda: bool,
    show_torch: bool,
    show_gpus: bool,
    refresh: bool,
    index: str,
    write: str | None,
) -> None:
    """Show the compatibility knowledge: CUDA toolkits, torch releases, GPUs.

    With no section flag, all three sections are shown. Every row carries its source (in --json).
    The torch rows say the day they were last held to an index; --refresh holds them again.
    """
    from cuship.compat import SECTIONS, load

    data = load()
    if refresh:
        _refresh(data, index, write, as_json)
        return
    chosen = {"cuda": show_cuda, "torch": show_torch, "gpus": show_gpus}
    sections = [name for name in SECTIONS if chosen[name] or not any(chosen.values())]
    console = make_console()
    if as_json:
        console.print_json(data.to_json(sections))
        return
    renderers = {"cuda": _cuda_table, "torch": _torch_table, "gpus": _gpu_table}
    for name in sections:
        console.out.print(renderers[name](data))


def _refresh(data: Compat, index: str, write: str | None, as_json: bool) -> None:
    from pathlib import Path

    from cuship._read import CONFIG, read_text
    from cuship.compat import DATA_DIR
    from cuship.resolve.releases import refresh, updated_toml

    result = refresh(data, index=index)
    console = make_console()
    if write is not None:
        source = index.rstrip("/") + "/torch/"
        text = updated_toml(read_text(DATA_DIR / "torch.toml", CONFIG), result, source)
        Path(write).write_text(text, encoding="utf-8")
    if as_json:
        console.print_json(result.to_json())
        return
    lines = [f"torch data: newest {result.known}, checked {result.checked or 'never'}; "
             f"{result.index} today ({result.today}):"]  # fmt: skip
    if result.current:
        lines.append("  nothing newer")
    lines += [
        f"  {row.minor}: {row.latest}, {row.released or 'upload month unknown'}, Python "
        f"{', '.join(row.pythons)}, manylinux_{row.manylinux}, PyPI's CUDA "
        f"{row.pypi_cuda or 'not read (the index serves no METADATA file)'}"
        for row in result.new
    ]
    lines += [
        f"  {minor}: a newer patch, {new} (data: {old})" for minor, old, new in result.patches
    ]
    if write is not None:
        lines.append(f"wrote {write}: copy it over src/cuship/data/torch.toml to use it")
    elif not result.current:
        lines.append("write the rows with --write FILE")
    console.print_text("\n".join(lines))
