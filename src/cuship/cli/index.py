"""`cuship index WHEELS… -o SITE`: write a static PEP 503/691/658 index with variant sub-indexes.

A ``WHEEL.intoto.jsonl`` beside a wheel (from `cuship attest`) is published and linked. A wheel
that cannot be indexed is skipped with its reason and the rest is indexed; the run then exits 1
unless ``--skip-bad`` says skipping is expected.
"""

from __future__ import annotations

from pathlib import Path

import click

from cuship.cli._common import json_option, make_console, verbose_option
from cuship.errors import CheckFailed, UsageError


def _table(summary: dict[str, object]) -> str:
    variants = summary["variants"]
    assert isinstance(variants, list)
    site = summary["site"]
    lines = [
        f"index   {site}/simple/   ({summary['wheels']} wheels, {summary['projects']} projects)",
        *(f"variant {site}/{label}/simple/" for label in variants),
        (
            f"rewrote {summary['rewritten']} of {summary['projects']} projects; "
            if summary.get("rewritten") is not None
            else ""
        )
        + f"read {summary['hashed']} files, {summary['cached']} from cache"
        + (f"; kept {summary['kept']} wheels of the earlier index" if summary.get("kept") else ""),
    ]
    skipped = summary["skipped"]
    assert isinstance(skipped, list)
    if skipped:
        lines.append(f"skipped {len(skipped)} files (see warnings)")
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
    from cuship.index import parse_yank_lines, read_yank_file, write

    console = make_console(verbose)
    inputs = [*wheels, *wheel_dirs]
    yanked = parse_yank_lines((y.replace(":", " ", 1) for y in yanks), source="--yank")
    if yank_file is not None:
        yanked.update(read_yank_file(yank_file))
    unyanked = set(parse_yank_lines(unyanks, source="--unyank"))
    if unyanked and not keep_existing:
        raise UsageError(
            "--unyank changes the yanks of kept wheels: it needs --keep-existing",
            hint="without --keep-existing a yank lasts while --yank/--yank-file names it",
        )
    if both := sorted(unyanked & set(yanked)):
        raise UsageError(f"{both[0]!r} is both yanked and unyanked", hint="name it once")
    if not inputs and not (keep_existing and (yanked or unyanked)):
        raise UsageError(
            "no wheels given",
            hint="pass wheel files, directories or --wheels-dir (or --keep-existing with "
            "--yank/--unyank to change only yanks)",
        )
    from cuship.index.describe import describe_wheel

    summary = write(
        inputs,
        out,
        base_url=base_url,
        yanked=yanked,
        describe=describe_wheel,
        keep_existing=keep_existing,
        unyanked=unyanked,
        rebuild=rebuild,
        replace_published=replace_published,
        emit=console.emit,
    )
    if as_json:
        console.print_json(summary.as_dict())
    else:
        console.print_text(_table(summary.as_dict()))
    from cuship.cli._summary import index_markdown, write_step_summary

    write_step_summary(console, index_markdown(summary))
    bad = [s for s in summary.skipped if s.bad_wheel]
    if bad and not skip_bad:
        raise CheckFailed(
            f"{len(bad)} wheel(s) could not be indexed: "
            + ", ".join(f"{s.path.name!r} ({s.reason})" for s in bad[:5])
            + (" ..." if len(bad) > 5 else "")
            + "; the index was written without them",
            hint="fix or remove them, or pass --skip-bad to accept an index without them",
        )
