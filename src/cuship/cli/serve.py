"""`cuship serve SITE`: serve a written index on loopback, negotiating HTML or JSON (PEP 691)."""

from __future__ import annotations

from pathlib import Path

import click

from cuship.cli._common import make_console, verbose_option


@click.command(name="serve")
@click.argument("site", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    default=0,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port; 0 picks a free one.",
)
@click.option(
    "--idle-timeout",
    default=30.0,
    show_default=True,
    type=click.FloatRange(0.1, 3600),
    help="Seconds a request may take to arrive whole, and an answer may wait for its reader.",
)
@click.option(
    "--workers",
    default=32,
    show_default=True,
    type=click.IntRange(1, 1024),
    help="Requests handled at once; more connections wait their turn.",
)
@verbose_option
def command(
    site: Path, host: str, port: int, idle_timeout: float, workers: int, verbose: bool
) -> None:
    """Serve SITE; the first line on stdout is the server's URL (with the real port)."""
    from cuship.serve import ServeLimits, descriptors_wanted, more_descriptors, serve, site_labels

    console = make_console(verbose)
    limits = ServeLimits(workers=workers, idle_timeout=idle_timeout)
    more_descriptors(descriptors_wanted(limits))
    server = serve(site, host, port, limits=limits, emit=console.emit)
    console.print_text(server.url)
    labels = site_labels(site)
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
