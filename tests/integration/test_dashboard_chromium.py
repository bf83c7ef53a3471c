"""``cuship dashboard`` renders in headless Chromium: no console errors, plots drawn, step marked.

A store of 30 synthetic runs with a planted 10 % step at run 13 (and a case whose name is an HTML
injection attempt) goes through the real CLI; Chromium then opens the site from disk.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cuship.bench.history._plot import LINE_COLOUR, STEP_COLOUR
from tests.bench_factory import synthetic_runs, write_store
from tests.integration.chromium import Page, chromium, chromium_path, decode_png
from tests.integration.clirun import cuship

EVIL = "<img src=x onerror=alert(1)>"

_FACTS = """JSON.stringify({
  plots: document.querySelectorAll("svg.plot").length,
  points: Array.from(document.querySelectorAll("svg.plot polyline.median"), l => l.points.numberOfItems),
  circles: document.querySelectorAll("svg.plot circle.point").length,
  markers: Array.from(document.querySelectorAll("svg.plot g.step-marker"), g => g.dataset.run),
  heading: document.querySelector("h1").textContent,
  images: document.images.length,
  box: (() => { const r = document.querySelector("svg.plot").getBoundingClientRect();
                return {x: r.x, y: r.y, width: r.width, height: r.height}; })(),
})"""

_HOVER = """(() => {
  const point = document.querySelector("svg.plot circle.point");
  point.dispatchEvent(new MouseEvent("mouseenter", {clientX: 20, clientY: 20}));
  const tip = document.getElementById("tip");
  return {hidden: tip.hidden, text: tip.textContent};
})()"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("dashboard")
    runs = synthetic_runs(30, step_at=12, factor=1.10, noise=0.01, seed=11)
    runs += synthetic_runs(8, step_at=99, seed=12, case=EVIL)
    store = write_store(root / "results.db", runs)
    out = root / "site"
    done = cuship("dashboard", "--store", str(store), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(out / "index.html")
    return out


def _colour_count(rows: list[bytes], colour: str, tolerance: int = 10) -> int:
    want = bytes.fromhex(colour.lstrip("#"))
    count = 0
    for row in rows:
        for i in range(0, len(row), 3):
            if all(abs(row[i + k] - want[k]) <= tolerance for k in range(3)):
                count += 1
    return count


def _ink(rows: list[bytes]) -> int:
    """Pixels clearly darker than the white background."""
    return sum(1 for row in rows for i in range(0, len(row), 3) if min(row[i : i + 3]) < 200)


def _check_bench_page(page: Page) -> dict[str, Any]:
    import json

    facts: dict[str, Any] = json.loads(page.evaluate(_FACTS))
    hover = page.evaluate(_HOVER)
    assert hover["hidden"] is False and hover["text"].startswith("run "), hover
    return facts


def test_dashboard_renders_in_chromium_with_plots_and_the_step(site: Path, tmp_path: Path) -> None:
    with chromium(tmp_path / "profile") as page:
        page.open((site / "index.html").as_uri())
        links = page.evaluate(
            'Array.from(document.querySelectorAll("table.latest a"), a => [a.textContent, a.href])'
        )
        assert sorted({text for text, _ in links}) == sorted({EVIL, "vecadd"})
        assert page.evaluate("document.images.length") == 0  # the injected <img> stayed text
        vecadd = next(href for text, href in links if text == "vecadd")

        page.open(vecadd)  # the index's relative link leads to the benchmark page
        facts = _check_bench_page(page)
        assert facts["heading"] == "vecadd"
        assert facts["plots"] == 2 and facts["points"] == [30, 30] and facts["circles"] == 60
        assert facts["markers"] == ["13", "13"]  # first run after the planted step
        box = facts["box"]
        png = page.screenshot({k: box[k] for k in ("x", "y", "width", "height")})
        problems = page.problems()

    assert problems == [], problems
    width, height, rows = decode_png(png)
    assert (width, height) == (round(box["width"]), round(box["height"]))
    assert _ink(rows) > 0.02 * width * height, "the plot region is blank"
    assert _colour_count(rows, STEP_COLOUR) >= 100, "no change-point marker in the screenshot"
    assert _colour_count(rows, LINE_COLOUR) >= 200, "no history line in the screenshot"


def test_without_chromium_the_test_fails_with_the_install_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # a fresh machine: no chromium anywhere on PATH
    with pytest.raises(pytest.fail.Exception, match=r"apt-get install -y .*chromium"):
        chromium_path()


_NCU_CELLS = """JSON.stringify({
  header: Array.from(document.querySelectorAll("table.latest thead th"), th => th.textContent),
  rows: Array.from(document.querySelectorAll("table.latest tbody tr"), tr =>
    Array.from(tr.querySelectorAll("td.ncu"), td => td.textContent)),
  visible: Array.from(document.querySelectorAll("table.latest td.ncu"),
    td => td.getBoundingClientRect().width > 0).every(Boolean),
})"""


def test_ncu_figures_render_beside_the_timings(tmp_path: Path) -> None:
    import json

    from tests.unit.test_bench_profile import _store_of_profiled_run

    store = _store_of_profiled_run(tmp_path)
    out = tmp_path / "site"
    done = cuship("dashboard", "--store", str(store), "-o", str(out))
    assert done.returncode == 0, done.stderr
    with chromium(tmp_path / "profile") as page:
        page.open((out / "index.html").as_uri())
        facts = json.loads(page.evaluate(_NCU_CELLS))
        problems = page.problems()
    assert problems == [], problems
    header = facts["header"]
    assert header[header.index("throughput") + 1 :][:5] == [
        "kernel time (ncu)", "DRAM (ncu)", "occupancy", "SM throughput", "BW vs ncu",
    ]  # fmt: skip
    assert facts["rows"] == [
        ["95 µs", "2500 GB/s (75% of peak)", "50%", "10%", "0.96x"],
        ["not profiled"],
    ]
    assert facts["visible"]
