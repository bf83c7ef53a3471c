"""``cuship dashboard``: a static site of the bench history (GitHub Pages ready)."""

from __future__ import annotations

from pathlib import Path

import click

from cuship.cli._common import make_console


@click.command("dashboard")
@click.argument("path", type=click.Path(path_type=Path), default=".")
@click.option(
    "--store",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The store (default: CUSHIP_STORE, then [check] store of PATH).",
)
@click.option(
    "-o",
    "--output",
    "site",
    type=click.Path(path_type=Path, file_okay=False),
    required=True,
    help="Directory to write the site to (replaced as a whole).",
)
@click.option("--title", default="cuship benchmarks", show_default=True, help="Title of the site.")
def command(path: Path, store: Path | None, site: Path, title: str) -> None:
    """Write a static dashboard of the bench runs stored for the project at PATH."""
    from cuship.bench.history.dashboard import build_site, write_site
    from cuship.store.read import load_bench_runs, store_for

    console = make_console()
    runs = load_bench_runs(store_for(path, store, "bench"))
    written = write_site(site, build_site(runs, title=title), emit=console.emit)
    console.print_text(str(written / "index.html"))
