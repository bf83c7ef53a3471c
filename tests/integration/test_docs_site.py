"""The docs site as a reader gets it: ``mkdocs build --strict`` (every warning, broken link or
missing anchor fails it) into a temporary directory, served over HTTP, every page opened in
headless Chromium: each has content, no console error, and every link within the site leads to
a page that exists, at an anchor that exists there."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urlsplit

import pytest

from cuship import docs
from tests.integration.chromium import chromium

REPO = Path(__file__).resolve().parents[2]

_FACTS = """JSON.stringify({
  title: document.title,
  heading: (document.querySelector("[role=main] h1") || {}).textContent || "",
  text: (document.querySelector("[role=main]") || {}).innerText || "",
  links: Array.from(document.querySelectorAll("a[href]"), a => a.href),
  ids: Array.from(document.querySelectorAll("[id]"), e => e.id),
})"""


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """No line per request on stderr."""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docs") / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    handler = functools.partial(_Quiet, directory=str(site))
    with ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/"
        finally:
            server.shutdown()
            thread.join()


def test_the_build_has_every_guide_and_every_generated_page(site: Path) -> None:
    written = {p.with_suffix(".html").name for p in (REPO / "docs").glob("*.md")}
    generated = {str(Path(path).with_suffix(".html")) for path in docs.PAGES}
    built = {str(p.relative_to(site)) for p in site.rglob("*.html")}
    assert written | generated | {"404.html"} == built


def test_every_page_renders_with_content_and_links_that_resolve(
    site: Path, served: str, tmp_path: Path
) -> None:
    pages = sorted(str(p.relative_to(site)) for p in site.rglob("*.html") if p.name != "404.html")
    facts: dict[str, dict[str, Any]] = {}
    problems: dict[str, list[str]] = {}
    with chromium(tmp_path / "profile") as browser:
        for page in pages:
            seen = len(browser.problems())
            browser.open(served + page)
            facts[page] = json.loads(browser.evaluate(_FACTS))
            problems[page] = browser.problems()[seen:]
    assert {page: found for page, found in problems.items() if found} == {}
    for page, found in facts.items():
        assert found["heading"].strip(), f"{page} has no heading"
        assert len(found["text"].split()) >= 30, f"{page} has almost no content"
    broken = []
    for page, found in facts.items():
        for link in found["links"]:
            target, anchor = urldefrag(link)
            if not target.startswith(served):
                continue  # another site: not this test's to judge
            path = urlsplit(target).path.lstrip("/") or "index.html"
            if path not in facts:
                broken.append(f"{page}: {link} (no such page)")
            elif anchor and anchor not in facts[path]["ids"]:
                broken.append(f"{page}: {link} (no such anchor)")
    assert broken == []
    internal = {link for found in facts.values() for link in found["links"] if served in link}
    assert len(internal) > len(pages)  # the navigation alone links every page
