"""`cuship resolve REQ --index URL`: the file this machine should install, and why not the others."""

from __future__ import annotations

import collections
import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

from cuship.cli._common import json_option, make_console, verbose_option
from cuship.cli._console import Console
from cuship.errors import CheckFailed
from cuship.resolve.select import Resolution, Verdict

F = TypeVar("F", bound=Callable[..., Any])


def index_options(func: F) -> F:
    """--index, --timeout, --retries, --tags-from-env: shared by resolve and install."""
    func = click.option(
        "--tags-from-env",
        is_flag=True,
        help="Judge tags for CUSHIP_TAGS (and CUSHIP_PYTHON_VERSION) instead of this Python.",
    )(func)
    func = click.option(
        "--retries", default=2, show_default=True, type=click.IntRange(0, 10), help="Extra tries."
    )(func)
    func = click.option(
        "--timeout",
        default=15.0,
        show_default=True,
        type=click.FloatRange(0.1, 600),
        help="Seconds to wait for each network step.",
    )(func)
    return click.option(
        "--index",
        "index",
        required=True,
        metavar="URL",
        help="The simple index root, e.g. http://127.0.0.1:8000/simple (file:// works too).",
    )(func)


def _status(verdict: Verdict, chosen: Verdict | None) -> str:
    if verdict is chosen:
        return "chosen"
    return "ok" if verdict.accepted else verdict.rule


ROWS_SHOWN = 50
"""Rows of the text table: an index page may list 100,000 files (all of them: --json)."""


def render(console: Console, resolution: Resolution) -> None:
    """The table of the files judged: the choice first, then the acceptable, then the rest; past
    :data:`ROWS_SHOWN` rows, one line counting the others by verdict."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"{resolution.requirement}: {_summary(resolution)}", title_justify="left")
    for column in ("", "file", "cuda", "runs as", "why"):
        table.add_column(column)
    judged = (*resolution.ranked, *resolution.rejected)
    for verdict in judged[:ROWS_SHOWN]:
        status = _status(verdict, resolution.chosen)
        why = "; ".join((verdict.reason, *verdict.notes))
        style = {"chosen": "bold green", "ok": "green"}.get(status, "red")
        table.add_row(
            Text(status, style=style),
            Text(verdict.candidate.filename),
            Text(verdict.cuda or "-"),
            Text(verdict.coverage),
            Text(why),
        )
    left = judged[ROWS_SHOWN:]
    if left:
        rules = collections.Counter(_status(v, resolution.chosen) for v in left)
        counts = ", ".join(f"{rule} {n}" for rule, n in rules.most_common())
        table.add_row("", Text(f"... {len(left)} more ({counts}); --json lists every one"))
    console.out.print(table)


def _summary(resolution: Resolution) -> str:
    offer = resolution.target.offer
    gpus = ", ".join(f"{name} {cc}" for name, cc in offer.gpus) or "no GPU"
    driver = f"driver {offer.driver_version or '?'}" + (
        f" (CUDA {offer.driver_cuda})" if offer.driver_cuda else ""
    )
    if offer.driver_version is None and offer.driver_cuda is None:
        driver = "driver unknown"
    torch = f", torch {offer.torch.version}" if offer.torch and offer.torch.version else ""
    return f"Python {resolution.target.python}, {gpus}, {driver}{torch}"


def fail_if_nothing(resolution: Resolution) -> None:
    if resolution.chosen is None:
        reasons = sorted({v.rule for v in resolution.rejected})
        raise CheckFailed(
            f"no file of {resolution.requirement!r} fits this machine: "
            f"{len(resolution.rejected)} rejected ({', '.join(reasons) or 'the index lists none'})",
            hint="see the reasons above; CUSHIP_GPUS/CUSHIP_DRIVER_CUDA/CUSHIP_TORCH override "
            "what cuship detects",
        )


@click.command("resolve")
@click.argument("requirement")
@index_options
@json_option
@verbose_option
def command(
    requirement: str,
    index: str,
    timeout: float,
    retries: int,
    tags_from_env: bool,
    as_json: bool,
    verbose: bool,
) -> None:
    """Pick the file of REQUIREMENT this machine should install, and say why not the others."""
    from cuship.resolve.http import fetch_options
    from cuship.resolve.install import resolve_index, target_from_env

    console = make_console(verbose)
    target = target_from_env(os.environ, tags_from_env=tags_from_env)
    options = fetch_options(os.environ, timeout=timeout, retries=retries)
    resolved = resolve_index(requirement, index, target, options=options, emit=console.emit)
    resolution = resolved.resolution
    if as_json:
        console.print_json(resolved.to_json())
    else:
        render(console, resolution)
        if resolution.chosen is not None:
            console.print_text(f"chosen: {resolution.chosen.candidate.url}")
    fail_if_nothing(resolution)
