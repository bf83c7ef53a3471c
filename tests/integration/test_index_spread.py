"""A large index run deals its projects out in shares, one per core, each read, described (a
pure wheel from the bytes its read left in memory) and written start to end by one process,
the first here and the others in forked children: the site it writes is byte for byte the
site of the same run done in one process, each wheel read again to describe it, skips and
all."""

from __future__ import annotations

import concurrent.futures
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from cuship.events import Event
from cuship.index import _pool, write
from cuship.index._pool import MIN_ITEMS, map_spread, workers_available
from cuship.index.describe import describe_wheel
from cuship.index.simple import cache_path
from tests.sitecheck import published
from tests.wheel_factory import make_wheel

pytestmark = pytest.mark.integration

PROJECTS = MIN_ITEMS // 4 + 10  # four wheels each: past the pool's threshold


def _tree(site: Path) -> dict[str, bytes]:
    return {str(p.relative_to(site)): p.read_bytes() for p in published(site) if p.is_file()}


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("spread")
    for i in range(PROJECTS):
        for version in ("1.0", "1.1", "2.0+cu130", "2.0+cu128torch2.8"):
            make_wheel(root, f"proj{i:03d}", version)
    (root / "broken-1.0-py3-none-any.whl").write_bytes(b"not a zip")
    (root / "README.txt").write_text("not a wheel\n")
    return root


def _serial(
    fn: object, items: list[object], *, min_items: int = 0, each: Any = None
) -> list[object]:
    del min_items
    assert callable(fn)
    results = []
    for index, item in enumerate(items):
        results.append(fn(item))
        if each is not None:
            each(index)
    return results


class _Counted(ProcessPoolExecutor):
    started = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        type(self).started += 1
        super().__init__(*args, **kwargs)


@pytest.fixture(autouse=True)
def counted(monkeypatch: pytest.MonkeyPatch) -> type[_Counted]:
    if workers_available() < 2:
        pytest.skip("one core: the work is never spread (nothing to compare)")
    _Counted.started = 0
    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", _Counted)
    return _Counted


@pytest.fixture
def forked(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The share of each child that fork_map starts, in order."""
    shares: list[Any] = []
    fork = _pool._fork

    def counted_fork(fn: Any, share: object) -> tuple[int, int]:
        shares.append(share)
        return fork(fn, share)

    monkeypatch.setattr(_pool, "_fork", counted_fork)
    return shares


def _serial_map(fn: Any, shares: list[Any]) -> list[Any]:
    return [fn(share) for share in shares]


def test_spread_run_writes_the_site_of_a_serial_run(
    wheels: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    counted: type[_Counted],
    forked: list[Any],
) -> None:
    simple = sys.modules["cuship.index.simple"]
    runs: list[Any] = []
    share_out = simple._shares

    def counted_shares(*args: Any) -> Any:
        runs.append(share_out(*args))
        return runs[-1]

    monkeypatch.setattr(simple, "_shares", counted_shares)
    events: list[Event] = []
    spread = write([wheels], tmp_path / "spread", describe=describe_wheel, emit=events.append)
    (dealt,) = runs
    # how far the scan is, counted in every share, told here as this share's wheels are read
    scan = [e for e in events if e.level == "progress" and e.data["stage"] == "scan"]
    files = 4 * PROJECTS + 2
    counts = [int(str(e.data["done"])) for e in scan]
    assert counts == sorted(set(counts)) and len(counts) > 10
    assert scan[-1].message.startswith(f"[scan {files}/{files}] wheels: {files - 1} read, ")
    # one share per core, each scanned, described and written start to end by one process
    # (each pure wheel described from the bytes read): the first here, the others in
    # forked children; no pool besides
    assert counted.started == 0
    assert len(dealt) == workers_available()
    assert forked == dealt[1:]
    # every other share writes its project pages first, its files/ entries after
    assert [share.pages_first for share in dealt] == [i % 2 == 1 for i in range(len(dealt))]
    projects = [{Path(f).name.partition("-")[0] for f in share.files} for share in dealt]
    assert all(projects)
    assert sum(map(len, projects)) == len(set().union(*projects))  # no project in two shares
    named = {f"proj{i:03d}" for i in range(PROJECTS)} | {"broken", "README.txt"}
    assert set().union(*projects) == named
    assert spread.hashed == 4 * PROJECTS + 1  # every wheel-named file read, the broken one too
    monkeypatch.setattr(simple, "fork_map", _serial_map)
    for module in ("cuship.index.scan", "cuship.index._shared"):
        monkeypatch.setattr(sys.modules[module], "map_spread", _serial)
    # ... and the serial run describes every wheel by reading it again, as describe_wheel does
    monkeypatch.setattr(sys.modules["cuship.index.scan"], "_describe_pure", lambda *a: None)
    serial = write([wheels], tmp_path / "serial", describe=describe_wheel)
    assert _tree(tmp_path / "spread") == _tree(tmp_path / "serial")
    assert spread.wheels == serial.wheels == 4 * PROJECTS
    assert [s.path.name for s in spread.skipped] == [s.path.name for s in serial.skipped]
    assert {s.path.name for s in spread.skipped} == {"broken-1.0-py3-none-any.whl", "README.txt"}


def test_map_spread_keeps_order_on_workers(counted: type[_Counted]) -> None:
    items = list(range(MIN_ITEMS * 2))
    told: list[int] = []
    assert map_spread(abs, [-i for i in items], each=told.append) == items
    assert counted.started == 1
    assert told == items  # each result told as it came back, in order
    assert map_spread(abs, [-i for i in items[: MIN_ITEMS - 1]]) == items[: MIN_ITEMS - 1]
    assert counted.started == 1  # too few to spread


def _cache_rows(site: Path) -> dict[str, list[tuple[object, ...]]]:
    import sqlite3

    db = sqlite3.connect(cache_path(site))
    try:
        return {
            "wheels": sorted(db.execute("SELECT path, size, ino, sha256, metadata FROM wheels")),
            "described": sorted(db.execute("SELECT key, doc FROM described")),
        }
    finally:
        db.close()


def test_a_spread_run_leaves_a_cache_that_the_next_run_reads(
    wheels: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forked: list[Any]
) -> None:
    # Each child writes what it learnt into the cache's file through a connection of its
    # own, beside this process's writes. The build records each wheel's stamp after linking it into the site (the
    # link moved its ctime), also after a rebuild over an earlier site (whose deletion moved
    # them again): the next run over the same wheels reads none of them again.
    site = tmp_path / "site"
    write([wheels], site, describe=describe_wheel)
    assert forked
    rebuilt = write([wheels], site, describe=describe_wheel, rebuild=True)
    assert (rebuilt.hashed, rebuilt.cached) == (1, 4 * PROJECTS)
    again = write([wheels], site, describe=describe_wheel)
    assert (again.hashed, again.cached) == (1, 4 * PROJECTS)  # only the broken file, again
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".site.")] == []
    assert [p.name for p in (site / ".cuship").iterdir()] == ["scan-cache.sqlite"]  # no journal
    # ... and holds what the cache of a serial run holds
    monkeypatch.setattr(sys.modules["cuship.index.simple"], "fork_map", _serial_map)
    write([wheels], tmp_path / "serial", describe=describe_wheel)
    assert _cache_rows(site) == _cache_rows(tmp_path / "serial")


def test_a_spread_rebuild_that_keeps_an_earlier_index_writes_the_serial_site(
    wheels: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forked: list[Any]
) -> None:
    # --keep-existing --rebuild over a site past the threshold: each kept wheel goes to its
    # project's share, a given wheel of a kept name replaces it there (with its warning), and
    # the projects given nothing keep all theirs.
    import shutil

    base = tmp_path / "base"
    write([wheels], base, describe=describe_wheel)
    given = tmp_path / "release2"
    for i in range(0, PROJECTS, 3):
        make_wheel(given, f"proj{i:03d}", "3.0")
        make_wheel(given, f"proj{i:03d}", "1.0", extra_metadata="Summary: rebuilt\n")
    make_wheel(given, "fresh", "1.0")
    forked.clear()  # the base site's children
    runs: dict[str, tuple[Any, list[str]]] = {}
    for how in ("spread", "serial"):
        if how == "serial":
            monkeypatch.setattr(sys.modules["cuship.index.simple"], "fork_map", _serial_map)
        site = tmp_path / how
        shutil.copytree(base, site)
        events: list[Event] = []
        summary = write(
            [given], site, keep_existing=True, rebuild=True, describe=describe_wheel,
            replace_published=True, emit=events.append,
        )  # fmt: skip
        runs[how] = (summary, sorted(e.message for e in events if e.level == "warning"))
    assert len(forked) == workers_available() - 1  # the spread run forked; the serial did not
    assert _tree(tmp_path / "spread") == _tree(tmp_path / "serial")
    (spread, spread_warnings), (serial, serial_warnings) = runs["spread"], runs["serial"]
    replaced = len(range(0, PROJECTS, 3))
    assert spread.wheels == serial.wheels == 4 * PROJECTS + replaced + 1
    assert spread.kept == serial.kept == 4 * PROJECTS - replaced
    assert spread_warnings == serial_warnings
    assert sum("replaces the published file" in w for w in spread_warnings) == replaced


def test_two_different_files_of_one_name_fail_a_spread_run(wheels: Path, tmp_path: Path) -> None:
    # Both files go to the same project's share, whichever process it runs in: the error is
    # the one a serial run gives, and no site is left half made.
    from cuship.errors import InputError

    other = tmp_path / "other"
    make_wheel(other, "proj001", "1.0", extra_metadata="Summary: another build\n")
    with pytest.raises(InputError, match="two different files are both named"):
        write([wheels, other], tmp_path / "site")
    assert not (tmp_path / "site").exists()
    assert not [p.name for p in tmp_path.iterdir() if ".new-" in p.name]  # no staging left
