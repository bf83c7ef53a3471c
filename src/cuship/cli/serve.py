"""`cuship serve SITE`: serve a written index on loopback, negotiating HTML or JSON (PEP 691)."""

from __future__ import annotations

from pathlib import Path

import click

from cuship.cli._common import make_console, verbose_option


@click.command(name="serve")
@click.argument("site", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=0, show_default=True, type=int, help="Port; 0 picks a free one.")
@verbose_option
def command(site: Path, host: str, port: int, verbose: bool) -> None:
    """Serve SITE; the first line on stdout is the server's URL (with the real port)."""
    from cuship.index.serve import serve

    console = make_console(verbose)
    server = serve(site, host, port, emit=console.emit)
    console.print_text(server.url)
    labels = sorted(p.parent.name for p in site.glob("*/simple") if p.parent.name != "files")
    console.err.print(f"index: {server.url}simple/", markup=False, highlight=False)
    for label in labels:
        console.err.print(f"variant {label}: {server.url}{label}/simple/", markup=False)
    console.err.print("press Ctrl-C to stop", style="dim")
    try:
        server.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
