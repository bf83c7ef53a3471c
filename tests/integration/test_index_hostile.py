"""`cuship index` as a user runs it, against METADATA bombs: refused, in bounded memory.

The issue's rows: a 306 kB wheel whose METADATA inflates to 300 MiB took 951 MB of memory and
wrote a 601 MB site; 1.5 GiB took 4.75 GB and ended in an sqlite3 traceback. Now the bomb is
skipped with its reason, the good wheel beside it is indexed, the run exits 1 and the whole
process stays under 100 MB, whether the archive declares the real size or lies about it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile_wheels import metadata_bomb
from tests.integration.indexsite import clean_env
from tests.sitecheck import publish_problems
from tests.wheel_factory import make_wheel

LIMIT_MB = 100


_MEASURE = """
import os, subprocess, sys
with open(sys.argv[1], "wb") as out:
    proc = subprocess.Popen(sys.argv[2:], stdout=out, stderr=subprocess.STDOUT)
    _pid, status, usage = os.wait4(proc.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def _peak_rss_mb(args: list[str], env: dict[str, str], log: Path) -> tuple[int, float]:
    """Run ``args``; (exit code, the process's peak resident memory in MB) from wait4.

    Measured from a small interpreter of its own: Linux counts a child's peak from before its
    exec, when it was a copy of its parent, so a parent as big as a long pytest worker would be
    measured instead of ``args``."""
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(log), *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    code, kib = done.stdout.split()
    return int(code), int(kib) / 1024  # KiB on Linux


@pytest.mark.parametrize("honest_size", [True, False], ids=["declares-1.5GiB", "claims-100B"])
def test_a_metadata_bomb_is_refused_in_bounded_memory(tmp_path: Path, honest_size: bool) -> None:
    wheels = tmp_path / "wheels"
    bomb = metadata_bomb(wheels, "bomb", 1536, honest_size=honest_size)
    assert bomb.stat().st_size < 2_000_000
    make_wheel(wheels, "good", "1.0")
    site = tmp_path / "site"
    args = [sys.executable, "-m", "cuship", "index", str(wheels), "-o", str(site)]
    log = tmp_path / "log.txt"
    code, peak = _peak_rss_mb(args, clean_env(tmp_path, GITHUB_ACTIONS=""), log)
    output = log.read_text()
    assert code == 1, output
    assert f"skipped {str(bomb)!r}" in output and "Traceback" not in output
    assert peak < LIMIT_MB, f"peak RSS {peak:.0f} MB"
    assert (site / "simple" / "good" / "index.html").is_file()
    assert not (site / "simple" / "bomb").exists()
    assert sum(p.stat().st_size for p in site.rglob("*") if p.is_file()) < 1_000_000
    assert publish_problems(site) == []
