"""`cuship variant WHEEL -o DIR [--label L] [--null] [--upper-bound]`: the variant twin of any
wheel (one cuship built, or a flash-attn-style wheel from elsewhere): its public version, the
label appended to its name, and a variant.json whose NVIDIA properties are read from its
binaries."""

from __future__ import annotations

from pathlib import Path

import click

from cuship.cli._common import json_option, make_console
from cuship.judge.variants import variant_file


@click.command("variant")
@click.argument("wheel", type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--out",
    "out_dir",
    type=click.Path(path_type=Path, file_okay=False),
    required=True,
    help="Directory for the variant wheel.",
)
@click.option("--label", default=None, help="Variant label (default: the wheel's local label).")
@click.option("--null", "null", is_flag=True, help="Write the null variant (no property).")
@click.option(
    "--upper-bound", is_flag=True, help="Add cuda_version_upper_bound (the next CUDA major)."
)
@json_option
def command(
    wheel: Path, out_dir: Path, label: str | None, null: bool, upper_bound: bool, as_json: bool
) -> None:
    """Write the variant twin of WHEEL into DIR and print its name and properties."""
    console = make_console()
    done = variant_file(wheel, out_dir=out_dir, label=label, null=null, upper_bound=upper_bound)
    if as_json:
        console.print_json(done.to_json())
        return
    console.print_text(str(done.output))
    for label_, entry in done.variant.get("variants", {}).items():
        for namespace, features in entry.items():
            for feature, values in features.items():
                console.print_text(f"  {label_}: {namespace} :: {feature} :: {', '.join(values)}")
