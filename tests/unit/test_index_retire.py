"""What an update stops listing stays published until the next update, and a project's HTML
and JSON pages change together, wherever a run stops (issue 34, item 7)."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from cuship.index import write
from cuship.index._retire import RETIRED
from tests.index_stops import Stop
from tests.wheel_factory import make_wheel

_HREF = re.compile(rb'href="([^"#]+)#sha256=')


@pytest.fixture
def wheels(tmp_path: Path) -> dict[str, Path]:
    d = tmp_path / "wheels"
    return {
        "a1": make_wheel(d, "alpha", "1.0"),
        "a2": make_wheel(d, "alpha", "1.1+cu130"),
        "a3": make_wheel(d, "alpha", "1.2"),
        "b1": make_wheel(d, "beta", "0.1"),
        "c1": make_wheel(d, "gamma", "2.0+cu128torch2.8"),
    }


def _first(wheels: dict[str, Path], site: Path) -> None:
    write([wheels[k] for k in ("a1", "a2", "b1", "c1")], site)


def test_what_an_update_removes_stays_published_until_the_next_update(
    tmp_path: Path, wheels: dict[str, Path]
) -> None:
    site = tmp_path / "site"
    _first(wheels, site)
    write([wheels[k] for k in ("a1", "b1")], site)  # alpha 1.1 and all of gamma go
    held = [
        f"files/{wheels['a2'].name}",
        f"files/{wheels['c1'].name}",
        f"files/{wheels['c1'].name}.metadata",
        "simple/gamma/index.html",
        "simple/gamma/index.json",
        "cu130/simple/alpha/index.html",
        "cu128torch2.8/simple/index.html",
    ]
    assert all((site / rel).is_file() for rel in held), "a reader holding a page finds its files"
    root = (site / "simple/index.html").read_text()
    assert (
        "gamma" not in root
        and wheels["a2"].name not in (site / "simple/alpha/index.html").read_text()
    )
    again = write([wheels[k] for k in ("a1", "b1")], site)  # changes nothing: keeps them too
    assert again.rewritten == 0 and all((site / rel).is_file() for rel in held)
    write([wheels["a3"]], site, keep_existing=True)  # the next update: they go
    assert not any((site / rel).exists() for rel in held)
    assert not (site / "simple/gamma").exists() and not (site / "cu128torch2.8").exists()
    assert not (site / RETIRED).exists(), "nothing is retired any more"


def test_a_retired_wheel_given_again_is_listed_and_kept(
    tmp_path: Path, wheels: dict[str, Path]
) -> None:
    site = tmp_path / "site"
    _first(wheels, site)
    write([wheels[k] for k in ("a1", "b1")], site)
    write([wheels[k] for k in ("a1", "a2", "b1", "c1")], site)  # all back
    write([wheels[k] for k in ("a1", "a2", "a3", "b1", "c1")], site)
    for key in ("a2", "c1"):
        assert (site / "files" / wheels[key].name).is_file()
    assert "gamma" in (site / "simple/index.html").read_text()
    assert not (site / RETIRED).exists()


def _pages_agree(site: Path) -> None:
    """Each project's index.html and index.json list the same files."""
    for page in site.rglob("index.json"):
        document = json.loads(page.read_bytes())
        if "files" not in document:
            continue  # a root
        listed = sorted(f["filename"] for f in document["files"])
        html = page.with_name("index.html").read_bytes()
        linked = sorted(Path(h.decode()).name.replace("%2B", "+") for h in _HREF.findall(html))
        assert linked == listed, f"{page.parent.relative_to(site)}: HTML and JSON differ"


def test_html_and_json_change_together_wherever_an_update_stops(
    tmp_path: Path, wheels: dict[str, Path], stop_after: Callable[[int | None], None]
) -> None:
    base = tmp_path / "base"
    _first(wheels, base)
    stops = 0
    while True:
        site = tmp_path / f"site-{stops}"
        shutil.copytree(base, site)
        stop_after(stops)
        try:
            write([wheels[k] for k in ("a1", "a3", "b1")], site)
        except Stop:
            stop_after(None)
            _pages_agree(site)
            stops += 1
            continue
        stop_after(None)
        break
    _pages_agree(site)
    assert stops > 3, "every change of the update was tried"
