"""``cuship toolkit list | install VERSION | path VERSION``: CUDA toolkits from NVIDIA's PyPI
wheels, assembled into a cache and reused."""

from __future__ import annotations

import os

import click

from cuship._format import size_text
from cuship.cli._common import json_option, make_console, verbose_option

__all__ = ["command"]


@click.group("toolkit")
def command() -> None:
    """CUDA 13.x toolkits assembled from NVIDIA's PyPI wheels, kept in a cache.

    A toolkit is a prefix laid out like the runfile's (bin/nvcc, nvvm/, include/, lib64/):
    CUDA_HOME for torch's cpp_extension, CUDAToolkit_ROOT/CUDACXX for CMake.
    """


@command.command("list")
@json_option
def list_command(as_json: bool) -> None:
    """The CUDA releases cuship can assemble, and the ones already in the cache."""
    from rich.table import Table

    from cuship.toolkit import list_toolkits

    found = list_toolkits(os.environ)
    console = make_console()
    if as_json:
        console.print_json(found.to_json())
        return
    table = Table(title=f"CUDA toolkits from PyPI (cache: {found.cache})", title_justify="left")
    for column in ("CUDA", "nvcc", "wheels", "cached"):
        table.add_column(column)
    for row in found.toolkits:
        r = row.release
        wheels = " ".join(f"{name.removeprefix('nvidia-')} {v}" for name, v in r.wheels.items())
        prefix = str(row.cached.prefix) if row.cached else "-"
        table.add_row(str(r.cuda), str(r.nvcc), wheels, prefix)
    console.out.print(table)
    for gap in found.unavailable:
        console.print_text(
            f"CUDA {gap.major}.x: not from PyPI ({gap.reason}); build those jobs on a runner "
            f"with the CUDA {gap.major} toolkit or in an nvidia/cuda:{gap.major}.x-devel image."
        )


@command.command("install")
@click.argument("version")
@click.option("--offline", is_flag=True, help="Use only the cache; fail when it lacks VERSION.")
@json_option
@verbose_option
def install_command(version: str, offline: bool, as_json: bool, verbose: bool) -> None:
    """Assemble the CUDA toolkit VERSION (13.0, 13.1.1, cu130) into the cache, or reuse it.

    Every wheel's sha256 is checked against the index; the prefix appears in one rename.
    """
    from cuship.cli._progress import progress_display
    from cuship.toolkit import ensure

    console = make_console(verbose)
    with progress_display(console, as_json=as_json) as emit:
        result = ensure(version, os.environ, offline=offline, emit=emit)
    if as_json:
        console.print_json(result.to_json())
        return
    made = result.installed
    how = (
        "cached"
        if result.reused
        else f"assembled from {size_text(result.downloaded_bytes)} of wheels"
    )
    console.print_text(
        f"CUDA {made.cuda} (nvcc {made.nvcc_version}) at {made.prefix}: {how} "
        f"in {result.seconds:.2f} s"
    )


@command.command("path")
@click.argument("version")
def path_command(version: str) -> None:
    """Print the prefix of the cached toolkit VERSION (for CUDA_HOME); exit 3 when not cached."""
    from cuship.toolkit import ensure

    result = ensure(version, os.environ, offline=True)
    make_console().print_text(str(result.installed.prefix))
