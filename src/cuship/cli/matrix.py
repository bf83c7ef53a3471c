"""``cuship matrix``: the build jobs after pruning, and why the rest were dropped."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from cuship.builder.record import read_record
from cuship.cli._common import make_console
from cuship.cli._console import Console
from cuship.compat import load
from cuship.config import load_config
from cuship.errors import NothingToDo, UsageError
from cuship.matrix import BuildJob, Matrix, expand_all


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` → ``(2, 4)``; shards count from 1."""
    try:
        index_text, count_text = text.split("/")
        index, count = int(index_text), int(count_text)
    except ValueError as err:
        raise UsageError(f"--shard {text!r} is not I/N", hint="e.g. --shard 1/4") from err
    if not 1 <= index <= count:
        raise UsageError(f"--shard {text!r}: I must be between 1 and N", hint="e.g. --shard 1/4")
    return index, count


def _table(console: Console, jobs: tuple[BuildJob, ...]) -> None:
    from rich.table import Table

    table = Table(title=f"{len(jobs)} jobs")
    for column in ("job", "python", "cuda", "torch", "arch", "label"):
        table.add_column(column)
    for job in jobs:
        torch = (
            ""
            if job.torch is None
            else f"{job.torch} ({job.torch_cuda and 'cu' + job.torch_cuda.replace('.', '')})"
        )
        cuda = "" if job.cpu else str(job.cuda)
        table.add_row(job.id, job.python, cuda, torch, job.arch.torch, job.label)
    console.out.print(table)


def _explain(console: Console, matrix: Matrix) -> None:
    from rich.table import Table

    if not matrix.pruned:
        console.out.print(f"nothing pruned: {matrix.considered} combinations considered")
    else:
        table = Table(title=f"{len(matrix.pruned)} of {matrix.considered} combinations pruned")
        table.add_column("combination")
        table.add_column("rule")
        table.add_column("why")
        for item in matrix.pruned:
            combo = " ".join(f"{k}={v}" for k, v in item.combination.items() if k != "platform")
            table.add_row(combo, item.rule, item.reason)
        console.out.print(table)
    drops: dict[str, list[str]] = {}
    for item in matrix.arch_drops:
        drops.setdefault(item.reason, []).append(item.job or "")
    for reason, jobs in drops.items():
        console.out.print(f"[yellow]arch dropped[/] from {len(jobs)} jobs: {reason}")
    for note in matrix.notes:
        console.out.print(note, markup=False, highlight=False)


@click.command("matrix")
@click.argument("path", type=click.Path(path_type=Path), default=".")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "github", "gitlab"]),
    default="table",
    show_default=True,
)
@click.option("--explain", is_flag=True, help="Show every pruned combination and why.")
@click.option(
    "--shard", "shard_spec", metavar="I/N", help="Only the I-th of N even slices of jobs."
)
def command(path: Path, fmt: str, explain: bool, shard_spec: str | None) -> None:
    """Expand the build matrix of PATH (a project directory or config file)."""
    from cuship.builder.defaults import prepare

    console = make_console()
    config = prepare(load_config(path), os.environ, emit=console.emit)
    matrix = expand_all(config, load(), torch_abi=read_record(config.root))
    if not matrix.jobs:
        reasons = sorted({p.reason for p in matrix.pruned})
        raise NothingToDo(
            f"the matrix of {str(path)!r} is empty after pruning {matrix.considered} combinations:\n  "
            + "\n  ".join(reasons),
            hint="widen [matrix] (more CUDA or torch versions) or loosen the exclude rules",
        )
    if shard_spec is not None:
        matrix = matrix.shard(*parse_shard(shard_spec))
    jobs = matrix.jobs
    if fmt == "json":
        console.print_json(matrix.to_json())
    elif fmt == "github":
        from cuship.ci.matrix import to_github  # the CI package loads only for its formats

        console.print_text(json.dumps(to_github(jobs), separators=(",", ":")))
    elif fmt == "gitlab":
        import yaml

        from cuship.ci.matrix import to_gitlab

        console.print_text(yaml.safe_dump(to_gitlab(jobs), sort_keys=False))
    else:
        _table(console, jobs)
        if explain:
            _explain(console, matrix)
