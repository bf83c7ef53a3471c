"""`cuship retag WHEEL --local LABEL`: a real retag (name, dist-info, METADATA, RECORD)."""

from __future__ import annotations

from pathlib import Path

import click

from cuship.cli._common import json_option, make_console
from cuship.wheel.write.retag import retag_file


@click.command("retag")
@click.argument("wheel", type=click.Path(path_type=Path))
@click.option("--local", required=True, help="Local version label, e.g. cu128torch2.8.")
@click.option(
    "-w",
    "--wheel-dir",
    "out_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Directory for the new wheel (default: next to WHEEL).",
)
@json_option
def command(wheel: Path, local: str, out_dir: Path | None, as_json: bool) -> None:
    """Write a copy of WHEEL whose version carries +LABEL."""
    console = make_console()
    done = retag_file(wheel, local=local, out_dir=out_dir, emit=console.emit)
    if as_json:
        console.print_json(done.to_json())
    else:
        console.print_text(str(done.output))
