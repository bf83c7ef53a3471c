"""``cuship bench history``: step changes across stored bench runs, per case and machine."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from cuship.cli._common import json_option, make_console

if TYPE_CHECKING:
    from rich.table import Table

    from cuship.bench.history.changepoints import History, Step


def _when(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _describe(step: Step) -> str:
    label = f" ({step.label})" if step.label else ""
    return (
        f"from run {step.run_id}{label} at {_when(step.started)}: {step.rel_change:+.1%} "
        f"{step.direction}, p={step.p_value:.3g}"
    )


def _table(found: Sequence[History]) -> Table:
    from rich.table import Table
    from rich.text import Text

    table = Table(title="cuship bench history", title_justify="left")
    for name in ("case", "machine", "runs", "noise", "steps (first run after each)"):
        table.add_column(name, no_wrap=name != "steps (first run after each)")
    for hist in found:
        steps = "\n".join(_describe(s) for s in hist.steps) or "no step"
        cells = (hist.series.key, hist.series.machine_id, str(len(hist.series.points)))
        table.add_row(*(Text(c) for c in (*cells, f"{hist.noise:.2%}", steps)))
    return table


@click.command("history")
@click.argument("path", type=click.Path(path_type=Path), default=".")
@click.option(
    "--store",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The store (default: CUSHIP_STORE, then [check] store of PATH).",
)
@click.option("--case", "case", metavar="GLOB", help="Only cases (or keys) matching this glob.")
@click.option("--machine", metavar="ID", help="Only this machine id (a prefix is enough).")
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Seed of the permutation tests."
)
@json_option
def command(
    path: Path, store: Path | None, case: str | None, machine: str | None, seed: int, as_json: bool
) -> None:
    """Find step changes in the stored bench history of the project at PATH, and the first run after each."""
    from cuship.bench.history.report import bench_history

    console = make_console()
    report = bench_history(path, store, case=case, machine=machine, seed=seed)
    if as_json:
        console.print_json(report.to_json())
        return
    console.out.print(_table(report.series))
    console.err.print(report.summary_line(), markup=False)
