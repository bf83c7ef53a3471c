"""``cuship ci init``: write GitHub Actions, GitLab CI or SkyPilot files from the project's config."""

from __future__ import annotations

import os
from pathlib import Path

import click

from cuship.ci.generate import PROVIDERS
from cuship.cli._common import json_option, make_console


@click.group("ci")
def command() -> None:
    """Generated CI: GitHub Actions, GitLab CI, SkyPilot spot GPU tasks."""


@command.command("init")
@click.argument("path", type=click.Path(path_type=Path), default=".")
@click.option(
    "--provider",
    "providers",
    multiple=True,
    type=click.Choice(PROVIDERS),
    help="Which files to write (repeatable). Default: github.",
)
@click.option(
    "-o",
    "--output-dir",
    "out_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Repository root to write into. Default: the project directory.",
)
@click.option(
    "--cuship",
    "cuship",
    multiple=True,
    metavar="REQUIREMENT",
    help="What the jobs install cuship with (repeatable, one requirement each), e.g. "
    "'cuship[all]==0.1.0'. Default: [ci] cuship, else the cuship running this (its PEP 610 "
    "record: an index version or a VCS commit); a local or editable cuship needs one of these.",
)
@click.option("--force", is_flag=True, help="Overwrite files that exist.")
@click.option("--print", "to_stdout", is_flag=True, help="Print the files; write nothing.")
@json_option
def init(
    path: Path,
    providers: tuple[str, ...],
    out_dir: Path | None,
    cuship: tuple[str, ...],
    force: bool,
    to_stdout: bool,
    as_json: bool,
) -> None:
    """Write CI files for the project at PATH (its cuship.toml, [ci] section included).

    Its jobs are those `cuship matrix PATH` plans here: the host's CUDA when the config names
    none (passed to the jobs as CUSHIP_MATRIX_CUDA, so every runner plans it too), a
    packages.yml's sdists read (no device code: +cpu jobs), the torch axis collapsed."""
    from cuship.builder.defaults import prepare
    from cuship.builder.record import read_record
    from cuship.ci import plan_ci, write_ci
    from cuship.compat import load
    from cuship.config import load_config
    from cuship.config.ci import check_requirement

    console = make_console()
    loaded = load_config(path)
    config = prepare(loaded, os.environ, emit=console.emit)
    plan = plan_ci(
        config,
        load(),
        providers or ("github",),  # type: ignore[arg-type]  # click.Choice above
        out_dir=out_dir,
        cuship=[check_requirement(r, "--cuship") for r in cuship],
        torch_abi=read_record(config.root),
        found_cuda=() if loaded.matrix.cuda else config.matrix.cuda,
    )
    if to_stdout:
        for file in plan.files:
            if len(plan.files) > 1:
                console.print_text(f"# ---- {file.path}")
            console.print_text(file.text.rstrip("\n"))
        return
    done = write_ci(plan, force=force)
    if as_json:
        console.print_json(done.to_json())
        return
    for file, written_path in zip(done.files, done.written, strict=True):
        console.print_text(f"wrote {written_path} ({file.provider})")
