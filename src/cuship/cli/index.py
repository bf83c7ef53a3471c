"""`cuship index WHEELS… -o SITE`: write a static PEP 503/691/658 index with variant sub-indexes.

A ``WHEEL.intoto.jsonl`` beside a wheel (from `cuship attest`) is published and linked. A wheel
that cannot be indexed is skipped with its reason and the rest is indexed; the run then exits 1
unless ``--skip-bad`` says skipping is expected.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from cuship.cli._common import json_option, make_console, verbose_option

if TYPE_CHECKING:
    from cuship.index.simple import IndexSummary


def _table(summary: IndexSummary) -> str:
    site = summary.site
    rewrote = (
        f"rewrote {summary.rewritten} of {summary.projects} projects; "
        if summary.rewritten is not None
        else ""
    )
    kept = f"; kept {summary.kept} wheels of the earlier index" if summary.kept else ""
    lines = [
        f"index   {site}/simple/   ({summary.wheels} wheels, {summary.projects} projects)",
        *(f"variant {site}/{label}/simple/" for label in summary.variants),
        f"{rewrote}read {summary.hashed} files, {summary.cached} from cache{kept}",
    ]
    if summary.skipped:
        lines.append(f"skipped {len(summary.skipped)} files (see warnings)")
    return "\n".join(lines)


@click.command(name="index")
@click.argument("wheels", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--wheels-dir",
    "wheel_dirs",
    multiple=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="A directory of wheels (may repeat; same as passing it as an argument).",
)
@click.option(
    "-o",
    "--output-dir",
    "--output",
    "out",
    required=True,
    type=click.Path(path_type=Path),
    help="Site directory to write (replaced atomically).",
)
@click.option(
    "--base-url",
    default=None,
    help="Where the wheels are hosted (e.g. release assets); links become absolute.",
)
@click.option(
    "--yank",
    "yanks",
    multiple=True,
    metavar="SPEC[:REASON]",
    help="Mark a wheel filename or NAME==VERSION as yanked (may repeat).",
)
@click.option(
    "--yank-file",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="File of yank entries: 'SPEC [reason]' per line.",
)
@click.option(
    "--keep-existing",
    is_flag=True,
    help="Keep the wheels SITE already lists (at their earlier URLs) beside the new ones; "
    "release jobs use it so a deploy does not drop earlier releases.",
)
@click.option(
    "--unyank",
    "unyanks",
    multiple=True,
    metavar="SPEC",
    help="With --keep-existing: lift the yank of a kept wheel filename or NAME==VERSION.",
)
@click.option(
    "--rebuild",
    is_flag=True,
    help="Render every page and swap the whole site in at once, instead of rewriting only "
    "the projects that change (what it stops listing stays, unlisted, until the next run).",
)
@click.option(
    "--replace-published",
    is_flag=True,
    help="Let a given wheel change the bytes of a published file of its name (refused "
    "otherwise: installs pinned to the old hash break); yank it first and tell its users.",
)
@click.option(
    "--skip-bad",
    is_flag=True,
    help="Exit 0 when some wheels could not be indexed (they are skipped either way).",
)
@json_option
@verbose_option
def command(
    wheels: tuple[Path, ...],
    wheel_dirs: tuple[Path, ...],
    out: Path,
    base_url: str | None,
    yanks: tuple[str, ...],
    yank_file: Path | None,
    keep_existing: bool,
    unyanks: tuple[str, ...],
    rebuild: bool,
    replace_published: bool,
    skip_bad: bool,
    as_json: bool,
    verbose: bool,
) -> None:
    """Write a static package index of WHEELS (files or directories) to SITE."""
    from cuship.index import write
    from cuship.index.describe import describe_wheel
    from cuship.index.yank import index_request

    console = make_console(verbose)
    request = index_request(
        [*wheels, *wheel_dirs],
        yanks=yanks,
        yank_file=yank_file,
        unyanks=unyanks,
        keep_existing=keep_existing,
    )
    from cuship.cli._progress import progress_display

    # The index forks its workers, which needs a single thread: a live display without its own
    with progress_display(console, as_json=as_json, redraw_thread=False) as emit:
        summary = write(
            request.inputs,
            out,
            base_url=base_url,
            yanked=request.yanked,
            describe=describe_wheel,
            keep_existing=request.keep_existing,
            unyanked=request.unyanked,
            rebuild=rebuild,
            replace_published=replace_published,
            emit=emit,
        )
    if as_json:
        console.print_json(summary.to_json())
    else:
        console.print_text(_table(summary))
    from cuship.cli._summary import index_markdown, write_step_summary

    write_step_summary(console, index_markdown(summary))
    if not skip_bad:
        summary.check_bad_wheels()
