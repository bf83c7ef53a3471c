"""``cuship env``: this machine's fingerprint."""

from __future__ import annotations

import click

from cuship.cli._common import json_option, make_console
from cuship.machine import Fingerprint, fingerprint


def _rows(fp: Fingerprint) -> list[tuple[str, str]]:
    gpus = "; ".join(
        f"{g.index}: {g.name} (cc {g.cc or '?'}"
        + (f", {g.memory_gib} GiB" if g.memory_gib is not None else "")
        + ")"
        for g in fp.gpus
    )
    driver = fp.driver_version or "none"
    if fp.driver_cuda:
        driver += f" (supports CUDA ≤ {fp.driver_cuda})"
    toolkit = "none (no nvcc found)"
    if fp.toolkit is not None:
        toolkit = f"CUDA {fp.toolkit.version or '?'} — {fp.toolkit.nvcc}"
    torch = "not installed"
    if fp.torch is not None:
        abi = {None: "?", True: "TRUE", False: "FALSE"}[fp.torch.cxx11abi]
        torch = f"{fp.torch.version} (CUDA {fp.torch.cuda or 'none'}, cxx11abi {abi})"
    return [
        ("GPUs", f"{gpus or 'none'} [{fp.gpu_source}]"),
        ("driver", driver),
        ("CUDA toolkit", toolkit),
        ("torch", torch),
        ("python", f"{fp.python} ({fp.python_tag}, {fp.machine})"),
        (
            "platform tags",
            ", ".join(fp.platform_tags[:4]) + (" …" if len(fp.platform_tags) > 4 else ""),
        ),
        ("glibc", fp.glibc or "unknown"),
        (
            "CPUs / memory",
            f"{fp.cpus} / {fp.memory_available_gib} of {fp.memory_total_gib} GiB free",
        ),
    ]


@click.command("env")
@json_option
def command(as_json: bool) -> None:
    """Show this machine's fingerprint (no torch import)."""
    console = make_console()
    fp = fingerprint()
    if as_json:
        console.print_json(fp.to_json())
        return
    from rich.table import Table

    table = Table(show_header=False, box=None)
    table.add_column(style="bold")
    table.add_column()
    for key, value in _rows(fp):
        table.add_row(key, value)
    console.out.print(table)
    for note in fp.notes:
        console.warn(note)
