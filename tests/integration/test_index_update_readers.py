"""Readers of a served index while `cuship index` updates it in place, removing wheels and
whole projects each time (issue 34, item 7): a pip-like reader fetches the root, then the
project pages it lists, then the files those list, a moment apart (as pip resolves before it
downloads), and never gets a 404 for anything a page it read lists: what an update removes
stays until the next update, which starts well after the moment (each is a new process)."""

from __future__ import annotations

import http.client
import re
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from cuship.serve.site import IndexServer, serve
from tests.integration.clirun import cuship
from tests.wheel_factory import make_wheel

_HREF = re.compile(r'href="([^"#]+)')
UPDATES = 6
HOLD = 0.2  # seconds a reader holds a page before it fetches what the page lists


@dataclass
class _Reader:
    base: str
    cycles: int = 0
    missing: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def get(self, url: str) -> tuple[int, str]:
        parts = urllib.parse.urlsplit(url)
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
        try:
            connection.request("GET", parts.path, headers={"Accept": "text/html"})
            response = connection.getresponse()
            return response.status, response.read().decode(errors="replace")
        finally:
            connection.close()

    def linked(self, url: str) -> list[str]:
        """The links of the page at ``url`` (absolute); a 404 is noted."""
        status, body = self.get(url)
        if status == 404:
            self.missing.append(url)
        return [urllib.parse.urljoin(url, href) for href in _HREF.findall(body)]

    def run(self) -> None:
        while not self.stop.is_set():
            pages = self.linked(f"{self.base}simple/")
            time.sleep(HOLD)
            files = [file for page in pages for file in self.linked(page)]
            time.sleep(HOLD)
            self.missing += [file for file in files if self.get(file)[0] == 404]
            self.cycles += 1


def _releases(root: Path) -> tuple[list[Path], list[Path]]:
    """Two sets of wheels; going from either to the other drops a project and releases."""
    first = [make_wheel(root / "a", name, "1.0") for name in ("proj-a", "proj-b", "proj-c")]
    second = [make_wheel(root / "b", name, "2.0") for name in ("proj-a", "proj-c", "proj-d")]
    return first, second


def test_a_reader_never_misses_what_a_page_it_read_lists(tmp_path: Path) -> None:
    first, second = _releases(tmp_path)
    site = tmp_path / "site"
    cuship("index", *first, "-o", site, check=True)
    with serve(site) as server:
        reader = _reader(server)
        thread = threading.Thread(target=reader.run)
        thread.start()
        try:
            for step in range(UPDATES):
                _wait_for(reader, step)  # each update meets a reader mid-cycle, however slow
                cuship("index", *(second if step % 2 == 0 else first), "-o", site, check=True)
        finally:
            reader.stop.set()
            thread.join()
    assert reader.cycles >= UPDATES - 1, "a whole read before every update"
    assert reader.missing == [], f"{len(reader.missing)} 404s for what a page listed"


def _wait_for(reader: _Reader, cycles: int) -> None:
    """Until ``reader`` has read ``cycles`` whole cycles (a loaded machine slows it down)."""
    deadline = time.monotonic() + 60
    while reader.cycles < cycles and time.monotonic() < deadline:
        time.sleep(0.05)


def _reader(server: IndexServer) -> _Reader:
    return _Reader(server.url)
