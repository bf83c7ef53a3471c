"""`cuship keygen -o KEY`: a new ed25519 key pair for signing attestations."""

from __future__ import annotations

from pathlib import Path

import click

from cuship.cli._common import json_option, make_console


@click.command("keygen")
@click.option(
    "-o",
    "--output",
    "out",
    required=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="Private key file to write (mode 0600); the public key goes to KEY.pub.",
)
@json_option
def command(out: Path, as_json: bool) -> None:
    """Write an ed25519 private key to KEY and its public key to KEY.pub (never overwrites)."""
    from cuship.attest import keygen

    pair = keygen(out)
    console = make_console()
    if as_json:
        console.print_json(pair.to_json())
        return
    console.print_text(
        f"private key {pair.private} (mode 0600: keep it secret, e.g. as a CI secret)\n"
        f"public key  {pair.public} (publish it; verify with --key {pair.public})\n"
        f"key id      {pair.keyid}"
    )
