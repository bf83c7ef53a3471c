"""``cuship report``: runs stored in the results store (check and bench history)."""

from __future__ import annotations

import time
from pathlib import Path

import click

from cuship.cli._common import make_console


@click.command("report")
@click.argument("path", type=click.Path(path_type=Path), default=".")
@click.option(
    "--since-hours", type=click.FloatRange(min=0, min_open=True), help="Only runs this recent."
)
@click.option("--kind", type=click.Choice(["check", "bench"]), help="Only runs of this kind.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "junit"]),
    default="text",
    show_default=True,
)
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), help="Write here.")
@click.option(
    "--store",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The store (default: CUSHIP_STORE, then [check] store of PATH).",
)
def command(
    path: Path,
    since_hours: float | None,
    kind: str | None,
    fmt: str,
    output: Path | None,
    store: Path | None,
) -> None:
    """Show the runs recorded in the results store of the project at PATH."""
    from cuship.check.report.history import render_history
    from cuship.store.read import load_runs, store_for

    console = make_console()
    since = time.time() - since_hours * 3600 if since_hours is not None else None
    runs = load_runs(store_for(path, store), since=since, kind=kind)  # type: ignore[arg-type]
    document = render_history(runs, fmt)
    if output is not None:
        from cuship._fs import write_atomic

        write_atomic(output, document.encode("utf-8"))
        console.err.print(f"{len(runs)} runs written to {output}", markup=False)
    else:
        console.print_text(document)
