"""``cuship ship``: the whole pipeline on one project, ending with the line that installs it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from cuship.cli._common import (
    default_out,
    exit_with,
    fetch_python_option,
    json_option,
    make_console,
    parallel_option,
    rebuild_option,
    verbose_option,
)

if TYPE_CHECKING:
    from cuship.cli._console import Console
    from cuship.ship import ShipReport


@click.command("ship")
@click.argument("path", type=click.Path(path_type=Path), default=".")
@click.option(
    "-o",
    "--out",
    "out_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Where wheels/, site/ and check/ go. Default: the project's dist/cuship.",
)
@click.option("--no-check", is_flag=True, help="Skip the quick check stage.")
@click.option(
    "--sign",
    "sign_key",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Private key (cuship keygen): attest each wheel; the index links the attestations.",
)
@parallel_option
@rebuild_option
@fetch_python_option
@json_option
@verbose_option
def command(
    path: Path,
    out_dir: Path | None,
    no_check: bool,
    sign_key: Path | None,
    parallel: int | None,
    rebuild: bool,
    fetch_python: bool,
    as_json: bool,
    verbose: bool,
) -> None:
    """Plan, build what this host can, repair/label/verify, quick-check, index, and summarise."""
    from cuship.builder.defaults import prepare
    from cuship.builder.host.tools import detect_host, preflight
    from cuship.cli._progress import ProgressDisplay, live_progress
    from cuship.config import load_config
    from cuship.ship import matrix_pythons, ship

    console = make_console(verbose)
    config = prepare(load_config(path), os.environ, emit=console.emit)
    host = detect_host(
        config, pythons=matrix_pythons(config), fetch_python=fetch_python, emit=console.emit
    )
    if host.nvcc is not None:
        preflight(host, config, "local")
    with ProgressDisplay(console, live=live_progress(console, as_json=as_json)) as emit:
        report = ship(
            path,
            (out_dir or default_out(config)).resolve(),
            config=config,
            host=host,
            environ=os.environ,
            quick_check=not no_check,
            sign_key=sign_key,
            parallel=parallel,
            rebuild=rebuild,
            emit=emit,
        )
    lines = report.install_lines()
    name = config.project.name or (lines[0].project if lines else "PROJECT")
    if as_json:
        console.print_json(report.to_json(name))
    else:
        _render(console, report, name, per_project=bool(config.packages))
    _step_summary(console, report)
    if report.failed:
        exit_with(1)


def _step_summary(console: Console, report: ShipReport) -> None:
    from cuship.cli._summary import (
        build_markdown,
        check_markdown,
        index_markdown,
        write_step_summary,
    )

    parts = [build_markdown("cuship ship", report.outcomes)]
    if report.check is not None:
        parts.append(check_markdown(report.check))
    if report.index is not None:
        parts.append(index_markdown(report.index))
    write_step_summary(console, "\n\n".join(parts))


def _render(console: Console, report: ShipReport, name: str, *, per_project: bool = False) -> None:
    """The ship's summary, ending with the lines that install project ``name`` from the index."""
    from cuship.cli._buildtable import render_build_summary

    render_build_summary(console, report.outcomes, None)
    for note in report.torch_axis:
        console.out.print(note, markup=False, highlight=False)
    if report.cpu_only:
        console.out.print(
            "[yellow]CPU-only:[/] no nvcc on this host, so the wheel above has no CUDA kernels; "
            "build the CUDA jobs on a runner with the CUDA toolkit.",
            highlight=False,
        )
    if report.check is not None:
        from cuship.check.report.render import summary_line

        console.out.print(
            f"quick check (cpu): {summary_line(report.check)}", markup=False, soft_wrap=True
        )
        for left in report.check.left_out():
            console.out.print(f"  left out: {left}", markup=False, highlight=False, soft_wrap=True)
    stages = ", ".join(f"{k} {v:.1f}s" for k, v in report.stages.items())
    console.out.print(f"stages: {stages}")
    if report.index is None:
        console.out.print("[red]nothing was indexed[/]: no wheel was built", highlight=False)
        return
    console.out.print(
        f"index: {report.site} ({report.index.wheels} wheels, variants {', '.join(report.index.variants)})",
        markup=False,
        soft_wrap=True,
    )
    lines = report.install_lines()
    if per_project:  # a packages.yml: each package pinned, since PyPI may have newer sdists
        console.out.print("install with (pip, then uv):", markup=False)
        for each in lines:
            console.out.print(f"  {each.pip}\n  {each.uv}", markup=False, soft_wrap=True)
        for note in report.torch_notes():
            console.out.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)
    else:
        console.out.print(
            f"install with:\n  {report.install_line(name)}", markup=False, soft_wrap=True
        )
    uv_line = report.variants_line(name)
    if uv_line is not None:
        console.out.print(
            f"or, the variant built for this machine's GPU and driver (uv 0.13+):\n  {uv_line}",
            markup=False,
            soft_wrap=True,
        )
    console.out.print("or serve it: cuship serve " + str(report.site), markup=False, soft_wrap=True)
