"""`cuship index` killed (SIGKILL) part-way through an update in place: what it leaves is an
index pip can read, and running the same command again gives the bytes of an update that was
never interrupted.

The update rewrites every project (each gets a new release and loses its oldest), so the
window in which a kill lands mid-write is long; kill times are spread over it.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.clirun import SRC, cuship
from tests.sitecheck import published
from tests.wheel_factory import make_wheel

PROJECTS = 60
_HREF = re.compile(rb'href="([^"#]+)')


def _tree(site: Path) -> dict[str, bytes]:
    return {str(p.relative_to(site)): p.read_bytes() for p in published(site) if p.is_file()}


def _readable(site: Path) -> None:
    for page in site.rglob("index.html"):
        for href in _HREF.findall(page.read_bytes()):
            target = (page.parent / href.decode().replace("%2B", "+")).resolve()
            assert target.exists(), f"{page.relative_to(site)} links missing {href.decode()}"


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("killed")
    old, new = root / "old", root / "new"
    new.mkdir()
    for i in range(PROJECTS):
        make_wheel(old, f"proj{i:03d}", "1.0")
        make_wheel(old, f"proj{i:03d}", "1.1+cu130")
        # the same file in both releases (made twice, a second apart, its zip times differ: a
        # changed published file, which the index refuses)
        shutil.copy2(make_wheel(old, f"proj{i:03d}", "1.2+cu128torch2.8"), new)
        make_wheel(new, f"proj{i:03d}", "2.0+cu130")
    return old, new


def _index(args: list[str]) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    command = [sys.executable, "-m", "cuship", "index", *args]
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_a_killed_update_leaves_a_readable_index_and_a_rerun_completes_it(
    tmp_path: Path, releases: tuple[Path, Path]
) -> None:
    old, new = releases
    base = tmp_path / "base"
    cuship("index", old, "-o", base, check=True)
    before = _tree(base)
    expected = tmp_path / "expected"
    shutil.copytree(base, expected)
    start = time.perf_counter()
    cuship("index", new, "-o", expected, check=True)
    took = time.perf_counter() - start
    after = _tree(expected)
    # The kill time adapts to this machine's pace right now (a loaded CI runner is slower than
    # the run timed above, or faster): a kill after the run ended comes earlier next time, one
    # before anything was written comes later. Every attempt is held to the same promise.
    fraction, mid_write = 0.5, 0
    for attempt in range(16):
        site = tmp_path / f"site{attempt}"
        shutil.copytree(base, site)
        running = _index([str(new), "-o", str(site)])
        time.sleep(took * fraction)
        running.send_signal(signal.SIGKILL)
        killed = running.wait() == -signal.SIGKILL
        _readable(site)
        left = _tree(site)
        if not killed or left == after:
            fraction *= 0.7
        elif left == before:
            fraction *= 1.3
        else:
            mid_write += 1
            fraction *= 1.08 if mid_write % 2 else 0.9
        cuship("index", new, "-o", site, check=True)
        assert _tree(site) == after, f"attempt {attempt}: killed at {fraction:.2f} of a run"
        if mid_write == 4:
            break
    assert mid_write >= 3, f"only {mid_write} of {attempt + 1} kills landed mid-write"
