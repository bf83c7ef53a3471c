"""`cuship attest FILES… --key KEY`: sign in-toto statements about wheels or results files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from cuship.cli._common import json_option, make_console


def _machine() -> dict[str, Any]:
    from cuship.machine import fingerprint

    return fingerprint(os.environ).to_json()


@click.command("attest")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--key",
    "key_path",
    required=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="Private key from `cuship keygen`.",
)
@click.option(
    "--predicate",
    "kind",
    type=click.Choice(["build", "check", "bench"]),
    default="build",
    show_default=True,
    help="build: SLSA provenance v1 with arches found; check/bench: verdicts of a results file.",
)
@click.option(
    "--results",
    multiple=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="build: `cuship matrix --format json` / `cuship build --json` output (may repeat); "
    "check/bench: the results JSON (default: the .json among FILES).",
)
@click.option(
    "-o",
    "--output",
    "out",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Write ONE envelope listing every FILE here (default: FILE.intoto.jsonl beside each).",
)
@json_option
def command(
    files: tuple[Path, ...],
    key_path: Path,
    kind: str,
    results: tuple[Path, ...],
    out: Path | None,
    as_json: bool,
) -> None:
    """Sign an in-toto Statement v1 (DSSE, ed25519) whose subjects are FILES' sha256."""
    from cuship.attest import load_signing_key
    from cuship.attest.run import attest_files

    key = load_signing_key(key_path)
    done = attest_files(
        files,
        key,
        kind=kind,  # type: ignore[arg-type]  # click.Choice above
        results=results,
        out=out,
        environ=os.environ,
        machine=_machine,
    )
    console = make_console()
    if as_json:
        console.print_json(done.to_json())
        return
    short, kind = done.keyid[:16], done.predicate
    console.print_text("\n".join(f"wrote {p} ({kind}, key id {short}…)" for p in done.envelopes))
