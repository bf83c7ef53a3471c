"""``cuship build``: plan and build the matrix jobs this host (or a container engine) can build."""

from __future__ import annotations

import os
from pathlib import Path

import click

from cuship.builder import collapse
from cuship.builder.defaults import prepare
from cuship.builder.host.tools import detect_host, preflight, sccache_stats
from cuship.builder.model import BuildPlan, Host
from cuship.builder.plan import plan_job
from cuship.builder.run.batch import build_all, plan_shared, require_buildable
from cuship.cli._buildtable import render_build_summary
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
from cuship.cli._console import Console
from cuship.cli._progress import ProgressDisplay, live_progress
from cuship.cli._summary import build_markdown, write_step_summary
from cuship.compat import load
from cuship.config import load_config
from cuship.judge.variants import publish_configured
from cuship.matrix import select_jobs


def _print_dry_run(console: Console, plans: list[BuildPlan], said: tuple[str, ...]) -> None:
    """Each plan: whether it runs here, its Python, what its plan found out (but what
    ``said`` already told), how its arch list reaches nvcc, and its steps."""
    from rich.markup import escape

    for plan in plans:
        state = "runnable here" if plan.runnable else f"not here: {plan.reason}"
        console.out.print(
            f"[bold]{escape(plan.job.id)}[/] ({plan.mode}; {escape(state)})",
            highlight=False,
            soft_wrap=True,
        )
        if plan.python is not None:
            where = f"; builds in {plan.build_env}" if plan.build_env else ""
            console.out.print(
                f"  # Python {plan.python.describe()}{where}", markup=False, soft_wrap=True
            )
        for note in (n for n in plan.notes if n not in said):
            console.out.print(f"  # {note}", markup=False, soft_wrap=True)
        if plan.arch_control:
            console.out.print(f"  # {plan.arch_control}", markup=False, soft_wrap=True)
        for step in plan.steps:
            line = step.shell() if step.argv else f"# {step.description}"
            console.out.print(f"  {line}", markup=False, highlight=False, soft_wrap=True)


@click.command("build")
@click.argument("path", type=click.Path(path_type=Path), default=".")
@click.option("--job", "job_ids", multiple=True, metavar="ID", help="Only these jobs (repeatable).")
@click.option(
    "--mode", type=click.Choice(["local", "container"]), default=None, help="Default: local."
)
@click.option(
    "--dry-run", is_flag=True, help="Print the exact commands and environment; build nothing."
)
@click.option(
    "-o",
    "--out",
    "out_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Where the wheels go (with raw/, logs/, envs/, build/, repairs/). Default: the project's "
    "dist/cuship/wheels.",
)
@parallel_option
@rebuild_option
@fetch_python_option
@json_option
@verbose_option
def command(
    path: Path,
    job_ids: tuple[str, ...],
    mode: str | None,
    dry_run: bool,
    out_dir: Path | None,
    parallel: int | None,
    rebuild: bool,
    fetch_python: bool,
    as_json: bool,
    verbose: bool,
) -> None:
    """Build the wheels of PATH's matrix that this host can build; list the others."""
    console = make_console(verbose)
    config = prepare(load_config(path), os.environ, emit=console.emit)
    record, collapser = collapse.start(config, console.emit)
    pairs = select_jobs(config, load(), job_ids, torch_abi=record)
    pythons = {job.python for _, job in pairs} if mode != "container" else ()
    host = detect_host(config, pythons=pythons, fetch_python=fetch_python, emit=console.emit)
    out_dir = (out_dir or default_out(config) / "wheels").resolve()
    modes = [mode or "local"]  # --dry-run shows the plans of the mode a build would run

    def plan_all(host: Host) -> list[BuildPlan]:
        return [
            plan_job(job, cfg, host, mode=m, out_dir=out_dir)  # type: ignore[arg-type]
            for m in modes
            for cfg, job in pairs
        ]

    at_once = config.build.parallel if parallel is None else parallel
    plans, workers = plan_shared(plan_all, host, at_once, collapser)
    if dry_run:
        _print_dry_run(console, plans, config.found)
        return
    preflight(host, config, mode or "local")
    require_buildable(plans, "the matrix of " + repr(str(path)))
    stats = sccache_stats(host.sccache, zero=True) if host.sccache else None
    with ProgressDisplay(console, live=live_progress(console, as_json=as_json)) as emit:
        outcomes = build_all(plans, emit=emit, collapse=collapser, workers=workers, rebuild=rebuild)
    stats = sccache_stats(host.sccache) if host.sccache else None
    built = [o.result.wheel for o in outcomes if o.result is not None and o.status == "built"]
    variants = publish_configured(config.variants, built, out_dir)
    if as_json:
        console.print_json([o.to_json() for o in outcomes])
    else:
        render_build_summary(console, outcomes, stats)
        for wheel in variants:
            console.print_text(f"variants: {wheel.name}")
    write_step_summary(console, build_markdown("cuship build", outcomes))
    if any(o.status == "failed" for o in outcomes):
        exit_with(1)
