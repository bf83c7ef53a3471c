"""bench_index_scale's spawner: a timed run's peak RSS is its own, not the bench's. Linux keeps
a process's high-water RSS across exec, so a process started from a large parent reports the
parent's size as its peak; the spawner, started while the bench is small, does not."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from benchmarks._index_scale import Spawner

pytestmark = pytest.mark.integration

BIG = 400 * 1024 * 1024


def _peak_from_here(argv: list[str]) -> float:
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    return usage.ru_maxrss / 1024


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss across exec: Linux")
def test_a_run_from_the_spawner_reports_its_own_peak_not_the_benchs() -> None:
    spawner = Spawner()
    spawner.start()  # while this process is small
    ballast = bytearray(BIG)  # then this process grows, as the bench does holding a site
    ballast[::4096] = b"x" * len(ballast[::4096])  # touched: resident
    argv = [sys.executable, "-c", "pass"]
    try:
        outcome = spawner.run(argv, dict(os.environ))
    finally:
        spawner.close()
    assert outcome.returncode == 0
    assert outcome.peak_mb < 100, outcome
    # started from this process, the same command reports this process's size as its peak
    assert _peak_from_here(argv) > BIG / (1024 * 1024)
    del ballast
