"""The ``cuship`` command line: a click group whose subcommands load on first use.

Each subcommand lives in its own module exposing ``command``; this file only knows their names
and one-line help, so ``cuship --help`` imports nothing heavy.
"""

from __future__ import annotations

import gc
import importlib
import sys
from collections.abc import Sequence

import click

from cuship.version import __version__

__all__ = ["main"]

# name -> (module under cuship.cli, one-line help shown by `cuship --help`)
COMMANDS: dict[str, tuple[str, str]] = {
    "env": (
        "env",
        "Show this machine's fingerprint: GPUs, driver, CUDA toolkit, torch, Python tags.",
    ),
    "compat": ("compat", "Show the compatibility knowledge: CUDA toolkits, torch releases, GPUs."),
    "matrix": ("matrix", "Expand the build matrix from config, pruned, with reasons."),
    "config": ("config", "Print the configuration as read, or its JSON Schema."),
    "build": (
        "build",
        "Build the matrix jobs this host can build: compile, repair, label, verify.",
    ),
    "toolkit": (
        "toolkit",
        "CUDA 13.x toolkits assembled from NVIDIA's PyPI wheels: list, install, path.",
    ),
    "ship": (
        "ship",
        "The whole pipeline: build what this host can, verify, index, print the install line.",
    ),
    "inspect": ("inspect", "Show SASS/PTX arches, needed and bundled libraries of a wheel or .so."),
    "repair": ("repair", "auditwheel repair with the CUDA exclude list, proven afterwards."),
    "retag": ("retag", "Give a wheel a local version label (name, dist-info, METADATA, RECORD)."),
    "variant": (
        "variant",
        "Write a wheel's variant twin (PEP 825), its NVIDIA properties read from its binaries.",
    ),
    "verify": ("verify", "Check a wheel's SASS/PTX arches, bundled libraries and local label."),
    "index": ("index", "Write a static PEP 503/691/658 package index, one sub-index per variant."),
    "serve": ("serve", "Serve an index directory on loopback with PEP 691 content negotiation."),
    "resolve": (
        "resolve",
        "Pick the wheel this machine should install from an index, and say why.",
    ),
    "install": (
        "install",
        "Install exactly the wheel `resolve` picks, downloaded and hash-pinned.",
    ),
    "check": ("check", "Check kernels against float64 references, on CPU engines or a GPU."),
    "doctor": (
        "doctor",
        "Explain why an installed CUDA package will not run here (GPUs, driver, torch, glibc).",
    ),
    "gpu-run": (
        "gpu_run",
        "The GPU job in one command: pick the wheel that fits, install it, test, check, bench.",
    ),
    "bench": ("bench", "Time benchmark cases, gate regressions and floors, keep every sample."),
    "report": ("report", "Show stored check and bench runs from the results store."),
    "dashboard": ("dashboard", "Write a static site of the bench history, change points marked."),
    "keygen": ("keygen", "Make an ed25519 key pair for signing attestations."),
    "attest": ("attest", "Sign in-toto statements (DSSE, ed25519) about wheels or results."),
    "verify-attestation": (
        "verify_attestation",
        "Check an attestation's signature, statement and the files' sha256.",
    ),
    "ci": ("ci", "Generate CI: GitHub Actions, GitLab CI, a SkyPilot spot GPU task."),
}


class LazyGroup(click.Group):
    """A group that imports a subcommand's module only when that subcommand runs."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module = importlib.import_module(f"cuship.cli.{entry[0]}")
        command: click.Command = module.command
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """``cuship --version``: the version, then where this cuship came from (PEP 610)."""
    if not value or ctx.resilient_parsing:
        return
    from cuship.provenance.direct_url import this_cuship

    source = this_cuship()
    click.echo(f"cuship {__version__}\nfrom {source.whence()}\npackage: {source.location}")
    ctx.exit()


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_version,
    help="Show the version and where this cuship was installed from, and exit.",
)
def cli() -> None:
    """cuship: take a CUDA Python package from source to a `pip install` that just works."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code.

    Called without ``argv`` (the console script, ``python -m cuship``), the process ends when
    this returns, and the objects it holds go with it: they are frozen out of the cycle
    collection that Python's shutdown runs over every object left (after a 5,000-wheel
    `cuship index`, 16 ms of a 0.6 s run; 5 ms frozen). cuship closes every file it writes
    itself, so nothing waits on that collection."""
    from cuship.cli._common import run_cli

    code = run_cli(cli, list(sys.argv[1:] if argv is None else argv))
    if argv is None:
        gc.freeze()
    return code
