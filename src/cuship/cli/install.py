"""`cuship install REQ --index URL`: download the chosen file, verify it, install exactly it."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import click

from cuship.cli._common import json_option, make_console, verbose_option
from cuship.cli.resolve import fail_if_nothing, index_options, render


@click.command("install")
@click.argument("requirement")
@index_options
@click.option("--installer", type=click.Choice(["pip", "uv"]), default="pip", show_default=True)
@click.option(
    "--python",
    "python",
    default=None,
    metavar="PATH",
    help="Interpreter (venv) to install into; its tags are used. Default: this one.",
)
@click.option(
    "--download-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Where the verified wheel is kept (default: ~/.cache/cuship/wheels).",
)
@click.option(
    "--extra-index-url",
    "extra_indexes",
    multiple=True,
    metavar="URL",
    help="Another index for the wheel's dependencies (repeatable), e.g. https://pypi.org/simple: "
    "an index cuship writes holds only the project's own wheels.",
)
@click.option("--dry-run", is_flag=True, help="Resolve and print the exact command only.")
@json_option
@verbose_option
def command(
    requirement: str,
    index: str,
    timeout: float,
    retries: int,
    tags_from_env: bool,
    installer: str,
    python: str | None,
    download_dir: Path | None,
    extra_indexes: tuple[str, ...],
    dry_run: bool,
    as_json: bool,
    verbose: bool,
) -> None:
    """Install exactly the file `cuship resolve` chooses, pinned by its sha256."""
    from cuship.resolve.http import fetch_options
    from cuship.resolve.install import download_dir as default_dir
    from cuship.resolve.install import plan_install, resolve_index, run_install, target_from_env

    console = make_console(verbose)
    environ = os.environ
    target = target_from_env(environ, tags_from_env=tags_from_env, python=python)
    options = fetch_options(os.environ, timeout=timeout, retries=retries)
    page, resolution = resolve_index(requirement, index, target, options=options, emit=console.emit)
    if not as_json:
        render(console, resolution)
    fail_if_nothing(resolution)
    plan = plan_install(
        resolution,
        installer="uv" if installer == "uv" else "pip",
        python=python or sys.executable,
        index=index,
        dest=download_dir or default_dir(environ),
        dry_run=dry_run,
        extra_indexes=extra_indexes,
        variants=page.variants,
    )
    if as_json:
        console.print_json(plan.to_json())
    if dry_run:
        if not as_json:
            console.print_text(f"download {plan.url} -> {plan.wheel} (sha256 {plan.sha256})")
            if plan.installs is not None:
                console.print_text(f"as {plan.installs}: {plan.how}")
            env = "".join(f"{k}={shlex.quote(v)} " for k, v in plan.env.items())
            console.print_text(env + shlex.join(plan.command))
        return
    from cuship.cli._progress import progress_display

    with progress_display(console, as_json=as_json) as emit:  # a large download's megabytes
        output = run_install(plan, environ, options=options, emit=emit)
    if verbose:
        console.err.print(output, markup=False, highlight=False)
    chosen = resolution.chosen
    assert chosen is not None
    console.err.print(
        f"installed {chosen.candidate.filename}: {plan.how}", markup=False, soft_wrap=True
    )
