"""``cuship gpu-run``: choose, install and test the wheel on this GPU machine, in one command."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from cuship.cli._common import exit_with, json_option, make_console, verbose_option

if TYPE_CHECKING:
    from cuship.cli._console import Console
    from cuship.gpurun.results import GpuRunReport


@click.command("gpu-run")
@click.argument("args", nargs=-1, type=click.Path(path_type=Path), metavar="[PATH]")
@click.option(
    "--wheels",
    multiple=True,
    type=click.Path(path_type=Path),
    metavar="DIR|FILE...",
    help="A directory of wheels, or wheel files (a glob after it works); the one that fits "
    "this machine is installed.",
)
@click.option("--in-place", is_flag=True, help="Install into the interpreter itself, no venv.")
@click.option(
    "-o",
    "--results",
    "results",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("gpu-run-results"),
    show_default=True,
    help="Directory for logs, JUnit, JSON reports and gpu-run.json.",
)
@click.option(
    "--python",
    "python",
    help="Interpreter to install into (--in-place) or to base the venv on; default: cuship's.",
)
@click.option(
    "--venv",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where to make the venv (default: RESULTS/venv); keep it out of uploaded artifacts.",
)
@click.option("--skip-bench", is_flag=True, help="Do not run the bench stage.")
@click.option(
    "--profile",
    type=click.Choice(["ncu"]),
    help="Run the bench stage with --profile ncu (each point once under Nsight Compute).",
)
@click.option(
    "--skip-sanitize",
    is_flag=True,
    help="Do not run the sanitize stage (the quick check under compute-sanitizer's tools).",
)
@click.option(
    "--skip-ptx",
    is_flag=True,
    help="Do not run the check-ptx stage (the quick check with the wheel's PTX, --force-ptx).",
)
@json_option
@verbose_option
def command(
    args: tuple[Path, ...],
    wheels: tuple[Path, ...],
    in_place: bool,
    results: Path,
    python: str | None,
    venv: Path | None,
    skip_bench: bool,
    profile: str | None,
    skip_sanitize: bool,
    skip_ptx: bool,
    as_json: bool,
    verbose: bool,
) -> None:
    """The GPU job: pick the wheel for this machine, install it, run pytest --require-gpu,
    cuship check --device cuda, the quick check again from the wheel's PTX (--force-ptx) and
    under compute-sanitizer's memcheck, racecheck, initcheck and synccheck, and cuship bench
    --assert-floors against it, and summarise.

    Exit 0 when every stage that ran passed; otherwise the most serious stage code, in the
    order 2 (usage/config) > 3 (tool or GPU missing) > 1 (failed) > 4 (nothing checked).
    """
    from cuship.gpurun.session import gpu_run, gpu_run_request

    request = gpu_run_request(
        args,
        wheels=wheels,
        results=results,
        in_place=in_place,
        python=python,
        venv=venv,
        skip_bench=skip_bench,
        profile=profile,
        skip_sanitize=skip_sanitize,
        skip_ptx=skip_ptx,
    )
    console = make_console(verbose)
    from cuship.cli._progress import progress_display

    with progress_display(console, as_json=as_json) as emit:
        report = gpu_run(request, environ=os.environ, emit=emit)
    if as_json:
        console.print_json(report.to_json())
    else:
        _render(console, report)
    from cuship.cli._summary import gpu_run_markdown, write_step_summary

    write_step_summary(console, gpu_run_markdown(report))
    exit_with(report.exit_code)


def _render(console: Console, report: GpuRunReport) -> None:
    from rich.markup import escape
    from rich.table import Table

    machine = report.machine
    gpus = ", ".join(f"{g['name']} ({g['cc']})" for g in machine["gpus"])
    faked = " [faked]" if machine["gpu_faked"] else ""
    table = Table(title=escape(f"cuship gpu-run: {report.name} on {gpus}{faked}"))
    for column in ("step", "verdict", "exit", "time", "log / reason"):
        table.add_column(column)
    for row in report.rows():
        table.add_row(*(escape(cell) for cell in row))
    console.out.print(table)
    wheel = report.wheel
    console.out.print(f"wheel: {wheel['filename']} ({wheel['why']})", markup=False, soft_wrap=True)
    console.out.print(
        f"summary: {report.results / 'gpu-run.json'}; exit {report.exit_code} ({report.verdict})",
        markup=False,
        soft_wrap=True,
    )
