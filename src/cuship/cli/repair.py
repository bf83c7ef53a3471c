"""`cuship repair WHEEL`: auditwheel repair with the CUDA exclude list, proven afterwards."""

from __future__ import annotations

import os
from pathlib import Path

import click

from cuship.cli._common import json_option, make_console
from cuship.wheel.write.repair import repair


@click.command("repair")
@click.argument("wheel", type=click.Path(path_type=Path))
@click.option(
    "-w",
    "--wheel-dir",
    "out_dir",
    type=click.Path(path_type=Path),
    default=Path("wheelhouse"),
    show_default=True,
    help="Where the repaired wheel goes.",
)
@click.option("--plat", default=None, help="Platform tag for auditwheel (default: the best fit).")
@json_option
def command(wheel: Path, out_dir: Path, plat: str | None, as_json: bool) -> None:
    """Repair WHEEL without bundling CUDA or torch libraries, and prove it."""
    console = make_console()
    result = repair(wheel, out_dir=out_dir, env=dict(os.environ), plat=plat, emit=console.emit)
    if as_json:
        console.print_json(result.to_json())
    else:
        console.print_text(str(result.output))
