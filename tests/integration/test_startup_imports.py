"""What a command loads before it works is its start-up (``benchmarks/bench_startup.py``): a
command that only plans or prints help must not load the network stack, the toolkit assembler
or the rich renderer. Read from the interpreter's own import log (``-X importtime``), so any
path that brings them back in, eager or through a package ``__init__``, fails here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NETWORK = ("cuship.resolve.fetch", "cuship.resolve.http", "http.client", "urllib.request", "ssl")
ASSEMBLER = ("cuship.toolkit.assemble", "concurrent.futures")


def imported(*args: str, succeeds: bool = True) -> set[str]:
    """The modules ``cuship ARGS`` imported, from its ``-X importtime`` log."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "CUSHIP_NVCC": "none"}
    argv = [sys.executable, "-X", "importtime", "-m", "cuship", *args]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO, check=False)
    assert (done.returncode == 0) == succeeds, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if line.startswith("import time:")]
    assert lines, "no import log: -X importtime printed nothing"
    return {line.rsplit("|", 1)[1].strip() for line in lines[1:]}


@pytest.mark.parametrize(
    ("args", "unwanted"),
    [
        (("--help",), (*NETWORK, *ASSEMBLER, "rich.console", "cuship.config")),
        (("matrix", "examples/cuvecops"), (*NETWORK, *ASSEMBLER)),
    ],
    ids=["help", "matrix"],
)
def test_a_command_that_plans_loads_nothing_it_does_not_use(
    args: tuple[str, ...], unwanted: tuple[str, ...]
) -> None:
    modules = imported(*args)
    assert "cuship.cli" in modules  # the log is cuship's own, read right
    assert sorted(set(unwanted) & modules) == []


def test_the_log_names_the_network_stack_when_it_is_loaded() -> None:
    """The check can fail: ``resolve`` needs the network stack, and the log shows it (the index
    named does not exist, so the command fails after loading what it needs)."""
    index = f"file://{REPO}/no-such-index"
    modules = imported("resolve", "nothing-here", "--index", index, succeeds=False)
    assert {"cuship.resolve.fetch", "cuship.cli"} <= modules
