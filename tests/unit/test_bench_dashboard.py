"""``cuship dashboard``: the site it writes (links, plots, escaping) and its exit codes."""

from __future__ import annotations

import dataclasses
import posixpath
from html.parser import HTMLParser
from pathlib import Path

import pytest

from cuship.bench.history.dashboard import MARKER, bench_page_name, build_site
from cuship.cli import main
from cuship.store import ResultRow, RunRecord
from tests.bench_factory import FINGERPRINT, bench_row, bench_run, synthetic_runs, write_store

EVIL = "<script>alert(1)</script>"
EVIL_LABEL = '"><img src=x onerror=alert(2)>'


class _Elements(HTMLParser):
    """Every start tag with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _elements(page: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Elements()
    parser.feed(page)
    return parser.tags


def _evil_runs() -> list[tuple[RunRecord, list[ResultRow]]]:
    runs = synthetic_runs(20, step_at=10, factor=1.2, seed=3, case=EVIL)
    fp = {**FINGERPRINT, "packages": {"<b>pkg</b>": "1.0"}, "gpu": "GPU <i>x</i>"}
    evil_run = dataclasses.replace(bench_run(20, fp), meta={"label": EVIL_LABEL})
    runs.append((evil_run, [bench_row(EVIL, {"n": 1024}, [1e-3, 1.1e-3])]))
    return runs


def test_site_has_index_a_page_per_benchmark_and_github_pages_files() -> None:
    runs = synthetic_runs(30, step_at=12, factor=1.1, seed=1)
    runs += synthetic_runs(5, step_at=99, seed=2, case="matmul")
    site = build_site(runs, title="my kernels")
    page = bench_page_name("vecadd")
    assert set(site) == {
        "index.html",
        ".nojekyll",
        MARKER,
        "style.css",
        "dashboard.js",
        page,
        bench_page_name("matmul"),
    }
    assert "<title>my kernels</title>" in site["index.html"]
    assert "GB/s" in site["index.html"]  # throughput from the work model
    assert "NVIDIA H100 80GB HBM3" in site["index.html"]
    assert "580.65.06" in site[page] and "torch 2.13.0" in site[page]  # environment of each run


def test_every_link_is_relative_and_points_into_the_site() -> None:
    site = build_site(synthetic_runs(30, step_at=12, factor=1.1, seed=1))
    for name, text in site.items():
        if not name.endswith(".html"):
            continue
        for tag, attrs in _elements(text):
            target = attrs.get("href") or attrs.get("src")
            if tag in ("a", "link", "script") and target is not None:
                assert "//" not in target, f"{name}: absolute link {target!r}"
                resolved = posixpath.normpath(posixpath.join(posixpath.dirname(name), target))
                assert resolved in site, f"{name}: broken link {target!r}"


def test_plot_has_a_point_per_run_and_a_marker_per_step() -> None:
    site = build_site(synthetic_runs(30, step_at=12, factor=1.1, seed=1))
    tags = _elements(site[bench_page_name("vecadd")])
    lines = [a for t, a in tags if t == "polyline"]
    assert len(lines) == 2  # one plot per parameter point on the one machine
    assert all(len((a["points"] or "").split()) == 30 for a in lines)
    markers = [a for t, a in tags if t == "g" and a.get("class") == "step-marker"]
    assert [m["data-run"] for m in markers] == ["13", "13"]


def test_text_from_the_store_is_escaped_everywhere() -> None:
    site = build_site(_evil_runs())
    for name, text in site.items():
        if not name.endswith(".html"):
            continue
        assert EVIL not in text and EVIL_LABEL not in text and "<b>pkg" not in text, name
        tags = _elements(text)
        scripts = [a.get("src") for t, a in tags if t == "script"]
        assert len(scripts) == 1 and (scripts[0] or "").endswith("dashboard.js"), name
        assert not [t for t, _ in tags if t in ("img", "b", "i")], name
        assert not [k for _, a in tags for k in a if k.startswith("on")], name
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in site["index.html"]


def test_cli_writes_the_site_and_replaces_it_on_the_next_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = write_store(tmp_path / "r.db", synthetic_runs(30, step_at=12, factor=1.1, seed=1))
    site = tmp_path / "site"
    assert main(["dashboard", "--store", str(store), "-o", str(site), "--title", "T"]) == 0
    assert capsys.readouterr().out.strip() == str(site / "index.html")
    assert (site / ".nojekyll").is_file() and (site / bench_page_name("vecadd")).is_file()
    (site / "stale.html").write_text("old")
    assert main(["dashboard", "--store", str(store), "-o", str(site)]) == 0
    assert not (site / "stale.html").exists()
    assert (site / "index.html").is_file()
    assert not [
        p
        for p in tmp_path.iterdir()
        if p.name.startswith(".site.") and not p.name.endswith(".lock")
    ]


def test_cli_refuses_to_replace_a_directory_it_did_not_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = write_store(tmp_path / "r.db", synthetic_runs(6, step_at=99))
    mine = tmp_path / "docs"
    mine.mkdir()
    (mine / "precious.txt").write_text("keep me")
    assert main(["dashboard", "--store", str(store), "-o", str(mine)]) == 2
    assert (mine / "precious.txt").read_text() == "keep me"
    assert "not written by `cuship dashboard`" in capsys.readouterr().err


def test_cli_exits_4_when_the_store_has_no_bench_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "none.db"
    assert main(["dashboard", "--store", str(missing), "-o", str(tmp_path / "site")]) == 4
    assert str(missing) in capsys.readouterr().err
    assert not (tmp_path / "site").exists()


def test_each_machine_gets_its_own_plots_and_the_index_names_both() -> None:
    other = {**FINGERPRINT, "machine_id": "0123456789ab", "gpu": "NVIDIA A100-SXM4-80GB"}
    runs = synthetic_runs(10, step_at=99, seed=8)
    runs += [
        (
            dataclasses.replace(bench_run(10 + i, other), id=11 + i),
            [bench_row("vecadd", {"n": 1024}, [2e-3])],
        )
        for i in range(4)
    ]
    site = build_site(runs)
    page = site[bench_page_name("vecadd")]
    sections = [a for t, a in _elements(page) if t == "section" and a.get("class") == "machine"]
    assert len(sections) == 2
    assert "NVIDIA A100-SXM4-80GB" in page and "0123456789ab" in page
    assert (
        site["index.html"].count("<tr><td><a href=") == 3
    )  # 2 keys on one machine, 1 on the other
