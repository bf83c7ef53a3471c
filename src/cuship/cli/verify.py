"""`cuship verify WHEEL`: configured arches present, no CUDA library bundled, label as expected,
a torch requirement that fits the torch ABI of the wheel's shared objects, and (``--manylinux``)
a platform tag within the glibc floor; also which GPUs its PTX can serve (JIT)."""

from __future__ import annotations

from pathlib import Path

import click

from cuship.cli._common import exit_with, json_option, make_console
from cuship.cli._console import Console
from cuship.errors import NothingToDo
from cuship.judge.verify import VerifyResult, verify
from cuship.wheel.audit import inspect_path


@click.command("verify")
@click.argument("target", type=click.Path(path_type=Path))
@click.option("--arch", "arches", default="", help='Arch list, e.g. "8.0;9.0;10.0;12.0+PTX".')
@click.option("--local", default=None, help="Expected local version label, e.g. cu128torch2.8.")
@click.option(
    "--torch",
    "torch_version",
    default=None,
    help="The torch X.Y the wheel was built against (default: its local label's, if any).",
)
@click.option(
    "--manylinux",
    "floor",
    default=None,
    metavar="X_Y",
    help='glibc floor, e.g. "2_28": fail a wheel whose platform tag needs a newer glibc.',
)
@json_option
def command(
    target: Path,
    arches: str,
    local: str | None,
    torch_version: str | None,
    floor: str | None,
    as_json: bool,
) -> None:
    """Check a wheel (or .so) against its build promise; exit 1 listing what is missing."""
    console = make_console()
    report = inspect_path(target)
    result = verify(report, arches=arches, local=local, torch=torch_version, manylinux=floor)
    if not result.checks:
        raise NothingToDo(
            f"nothing to verify in {str(target)!r}",
            hint='pass --arch "8.0;9.0;12.0+PTX", --local LABEL and/or --manylinux 2_28',
        )
    if as_json:
        console.print_json(result.to_json())
    else:
        _render(console, result)
    if not result.ok:
        exit_with(1)


def _render(console: Console, result: VerifyResult) -> None:
    for note in result.notes:
        console.print_text(f"note: {result.target}: {note}")
    if result.ok:
        console.print_text(f"ok: {result.target}: {'; '.join(result.checks)}")
    for problem in result.problems:
        console.error(f"{result.target}: {problem}")
    for line in result.ptx_lines():
        console.print_text(f"ptx: {result.target}: {line}")
