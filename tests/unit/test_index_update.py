"""Updating an index in place: only the projects that change are rewritten, the result is the
bytes a full rebuild gives, and a run stopped at any write leaves a site pip can read that a
rerun completes."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from cuship.errors import NothingToDo
from cuship.index import site_records, write
from cuship.index._retire import RETIRED, Retired
from tests.index_stops import Stop
from tests.sitecheck import published
from tests.wheel_factory import make_wheel


def _tree(site: Path) -> dict[str, bytes]:
    return {str(p.relative_to(site)): p.read_bytes() for p in published(site) if p.is_file()}


def _dirs(site: Path) -> list[str]:
    return sorted(str(p.relative_to(site)) for p in published(site) if p.is_dir())


def _stamps(site: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(site)): (p.stat().st_ino, p.stat().st_mtime_ns)
        for p in published(site)
        if p.is_file()
    }


@pytest.fixture
def wheels(tmp_path: Path) -> dict[str, Path]:
    """Three projects, one with two variant labels."""
    d = tmp_path / "wheels"
    return {
        "a1": make_wheel(d, "alpha", "1.0"),
        "a2": make_wheel(d, "alpha", "1.1+cu130"),
        "a3": make_wheel(d, "alpha", "1.1+cu128torch2.8"),
        "b1": make_wheel(d, "beta", "0.1"),
        "c1": make_wheel(d, "gamma", "2.0+cu130"),
    }


def _first(wheels: dict[str, Path], site: Path) -> None:
    write([wheels[k] for k in ("a1", "a2", "b1", "c1")], site)


def test_adding_a_wheel_rewrites_only_its_project_and_the_roots(
    tmp_path: Path, wheels: dict[str, Path]
) -> None:
    site = tmp_path / "site"
    _first(wheels, site)
    before = _stamps(site)
    summary = write([wheels["a3"]], site, keep_existing=True)
    assert (summary.rewritten, summary.wheels, summary.kept) == (1, 5, 4)
    assert summary.hashed == 1, "one wheel read; the index's other wheels are not"
    after = _stamps(site)
    untouched = [k for k in before if k.startswith(("simple/beta/", "simple/gamma/", "cu130/"))]
    assert untouched and all(after[k] == before[k] for k in untouched)
    changed = {k for k in after if after[k] != before.get(k)}
    assert changed == {
        "files/alpha-1.1+cu128torch2.8-py3-none-any.whl",
        "files/alpha-1.1+cu128torch2.8-py3-none-any.whl.metadata",
        "simple/alpha/index.html",
        "simple/alpha/index.json",
        "simple/alpha/cuship.json",
        "cu128torch2.8/simple/alpha/index.html",
        "cu128torch2.8/simple/alpha/index.json",
        "cu128torch2.8/simple/index.html",
        "cu128torch2.8/simple/index.json",
        "index.html",
        "cuship-index.json",
    }
    assert not list(tmp_path.glob(".site.new-*")), "no staging directory left beside the site"


def _listed(site: Path, paths: list[str]) -> list[str]:
    """``paths`` less what an update retired (kept until the next update) and its record."""
    retired = set(Retired.read(site).retired) | {RETIRED}
    return [p for p in paths if not any(p == r or p.startswith(f"{r}/") for r in retired)]


def _covered(site: Path, tree: dict[str, bytes]) -> set[str]:
    """The files of ``tree`` that ``site``'s record retires."""
    return set(tree) - set(_listed(site, list(tree)))


def _same_as_rebuild(site: Path, tmp_path: Path, run: Callable[[Path, bool], object]) -> None:
    """``run`` on ``site`` in place and on a copy with ``rebuild``: the same bytes and dirs,
    what the update stops listing kept by both until the next run, the same files retired."""
    twin = tmp_path / f"twin-{len(list(tmp_path.glob('twin-*')))}"
    shutil.copytree(site, twin)
    run(site, False)
    run(twin, True)
    tree, twin_tree = _tree(site), _tree(twin)
    retired, twin_retired = tree.pop(RETIRED, None), twin_tree.pop(RETIRED, None)
    assert tree == twin_tree and _dirs(site) == _dirs(twin)
    assert (retired is None) == (twin_retired is None)
    assert _covered(site, tree) == _covered(twin, twin_tree)


def test_every_kind_of_update_gives_the_bytes_of_a_full_rebuild(
    tmp_path: Path, wheels: dict[str, Path]
) -> None:
    site = tmp_path / "site"
    _first(wheels, site)
    new_project = make_wheel(tmp_path / "more", "delta", "3.0+cu128torch2.8")
    steps: list[Callable[[Path, bool], object]] = [
        lambda s, r: write([wheels["a3"]], s, keep_existing=True, rebuild=r),
        lambda s, r: write([new_project], s, keep_existing=True, rebuild=r),
        lambda s, r: write(
            [], s, keep_existing=True, yanked={wheels["b1"].name: "broken"}, rebuild=r
        ),
        lambda s, r: write([], s, keep_existing=True, yanked={"alpha==1.0": ""}, rebuild=r),
        lambda s, r: write([], s, keep_existing=True, unyanked={wheels["b1"].name}, rebuild=r),
        # exactly these: gamma and delta go, and with them the cu128torch2.8 sub-index
        lambda s, r: write([wheels[k] for k in ("a1", "a2", "b1")], s, rebuild=r),
        lambda s, r: write(list(wheels.values()), s, rebuild=r),
    ]
    for step in steps:
        _same_as_rebuild(site, tmp_path, step)
    records = {r["filename"]: r for r in site_records(site)}
    assert set(records) == {w.name for w in wheels.values()}
    assert records[wheels["b1"].name]["yanked"] is None, "an exact run yanks what it is told"


def test_a_rebuild_keeps_what_it_stops_listing_until_the_next_run(
    tmp_path: Path, wheels: dict[str, Path]
) -> None:
    """A reader between a page and its files (pip, with the page of the run before) never
    finds a file gone: a rebuild keeps what it drops, unlisted, as an update does."""
    site = tmp_path / "site"
    _first(wheels, site)
    gamma = f"files/{wheels['c1'].name}"
    write([wheels[k] for k in ("a1", "a2", "b1")], site, rebuild=True)
    assert (site / gamma).read_bytes() == wheels["c1"].read_bytes()
    assert (site / "simple/gamma/index.html").is_file(), "its old page too"
    assert wheels["c1"].name not in {r["filename"] for r in site_records(site)}
    assert "gamma" not in (site / "simple/index.html").read_text()
    assert {"simple/gamma", gamma, "cu130/simple/gamma"} <= Retired.read(site).retired
    write([wheels[k] for k in ("a1", "a2", "b1")], site, rebuild=True)  # its grace is over
    assert not (site / gamma).exists() and not (site / "simple/gamma").exists()
    assert not (site / RETIRED).exists()


@pytest.mark.parametrize("rebuild", [False, True])
def test_moving_the_wheels_to_a_base_url_retires_the_copies_the_site_held(
    tmp_path: Path, wheels: dict[str, Path], rebuild: bool
) -> None:
    site = tmp_path / "site"
    _first(wheels, site)
    alpha = f"files/{wheels['a1'].name}"
    given = [wheels[k] for k in ("a1", "a2", "b1", "c1")]
    write(given, site, base_url="https://example.org/v1", rebuild=rebuild)
    assert alpha in Retired.read(site).retired, "the site's own copy: unlisted, kept a run"
    assert (site / alpha).is_file() and (site / f"{alpha}.metadata").is_file()
    write([*given, wheels["a3"]], site, base_url="https://example.org/v1", rebuild=rebuild)
    assert not (site / alpha).exists(), "deleted by the next run"
    assert (site / f"{alpha}.metadata").is_file(), "PEP 658 metadata is still served here"


def test_kept_wheels_keep_their_yank_until_unyanked(
    tmp_path: Path, wheels: dict[str, Path]
) -> None:
    site = tmp_path / "site"
    _first(wheels, site)
    write([], site, keep_existing=True, yanked={wheels["b1"].name: "broken build"})
    write([wheels["a3"]], site, keep_existing=True)  # a later release
    page = json.loads((site / "simple/beta/index.json").read_bytes())
    assert page["files"][0]["yanked"] == "broken build"
    write([], site, keep_existing=True, unyanked={"beta==0.1"})
    page = json.loads((site / "simple/beta/index.json").read_bytes())
    assert page["files"][0]["yanked"] is False


def test_nothing_changed_writes_nothing(tmp_path: Path, wheels: dict[str, Path]) -> None:
    site = tmp_path / "site"
    _first(wheels, site)
    before = _stamps(site)
    summary = write([wheels[k] for k in ("a1", "a2", "b1", "c1")], site)
    assert summary.rewritten == 0
    assert _stamps(site) == before
    with pytest.raises(NothingToDo, match="no wheels given"):
        write([], site)


_HREF = re.compile(rb'href="([^"#]+)')


def _readable(site: Path) -> None:
    """What pip can reach is whole: every page parses and every file a page links is there."""
    for page in site.rglob("index.json"):
        json.loads(page.read_bytes())
    for page in site.rglob("index.html"):
        for href in _HREF.findall(page.read_bytes()):
            target = (page.parent / href.decode().replace("%2B", "+")).resolve()
            assert target.exists(), f"{page.relative_to(site)} links missing {href.decode()}"
    document = json.loads((site / "cuship-index.json").read_bytes())
    for entry in document["projects"].values():
        assert (site / entry["manifest"]).is_file()


def test_a_run_stopped_at_any_write_leaves_a_readable_site_that_a_rerun_completes(
    tmp_path: Path, wheels: dict[str, Path], stop_after: Callable[[int | None], None]
) -> None:
    base = tmp_path / "base"
    _first(wheels, base)
    more = make_wheel(tmp_path / "more", "delta", "3.0+cu128torch2.8")

    def add(site: Path) -> object:
        return write([wheels["a3"], more], site, keep_existing=True)

    def replace(site: Path) -> object:  # alpha shrinks, gamma and the cu130 label of gamma go
        return write([wheels[k] for k in ("a3", "b1")], site)

    for operation in (add, replace):
        expected = tmp_path / f"expected-{operation.__name__}"
        shutil.copytree(base, expected)
        operation(expected)
        stops = 0
        while True:
            site = tmp_path / f"site-{operation.__name__}-{stops}"
            shutil.copytree(base, site)
            stop_after(stops)
            try:
                operation(site)
            except Stop:
                stop_after(None)
                _readable(site)
                operation(site)  # the rerun
                assert _tree(site) == _tree(expected), f"stopped after {stops} writes"
                assert _dirs(site) == _dirs(expected)
                stops += 1
                continue
            stop_after(None)
            break
        assert stops > 10, "every write of the update was tried"


def test_a_describe_record_read_back_from_the_cache_changes_nothing(
    tmp_path: Path, wheels: dict[str, Path]
) -> None:
    """The cache keeps a describe record with sorted keys; a fresh one may come in any order:
    the manifests must not tell them apart (else every run rewrites the project)."""

    def describe(path: Path) -> dict[str, object]:
        return {"zeta": path.name, "alpha": {"y": 1, "x": 2}}

    site = tmp_path / "site"
    write([wheels["a1"]], site, describe=describe)
    again = write([wheels["a1"]], site, describe=describe)
    assert (again.cached, again.rewritten) == (1, 0)
