"""`cuship verify-attestation ENVELOPE --key KEY.pub [FILES…]`: signature, statement, digests."""

from __future__ import annotations

from pathlib import Path

import click

from cuship.cli._common import exit_with, json_option, make_console


@click.command("verify-attestation")
@click.argument("envelope", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--key",
    "key_path",
    required=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="Public key (KEY.pub from `cuship keygen`).",
)
@json_option
def command(envelope: Path, files: tuple[Path, ...], key_path: Path, as_json: bool) -> None:
    """Check ENVELOPE was signed by KEY, holds an in-toto statement, and names FILES' sha256.

    Exit 0 when all holds; 1 with the reason on stderr when anything fails.
    """
    from cuship.attest import load_verify_key, verify

    result = verify(envelope, key=load_verify_key(key_path), files=files)
    console = make_console()
    if as_json:
        console.print_json(result.to_json())
    for problem in result.problems:
        console.error(f"{envelope}: {problem}")
    if not result.ok:
        exit_with(1)
    if not as_json:
        names = ", ".join(s.name for s in result.subjects)
        compared = f"{len(result.files)} file(s) match" if result.files else "no file compared"
        console.print_text(
            f"ok: {envelope}: signed by key id {result.keyid}; {result.predicate_type}; "
            f"subjects: {names}; {compared}"
        )
