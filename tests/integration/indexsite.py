"""Helpers for the resolver tests: a clean environment and a misbehaving server."""

from __future__ import annotations

import http.server
import json
import os
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def clean_env(tmp: Path, **extra: str) -> dict[str, str]:
    """The environment without the machine's pip/uv configuration or CUSHIP_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_", "CUSHIP_"))}
    env.update(
        PIP_CONFIG_FILE=os.devnull,
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_NO_CACHE_DIR="1",
        UV_NO_CONFIG="1",
        UV_CACHE_DIR=str(tmp / "uv-cache"),
        UV_PYTHON_DOWNLOADS="never",
        PYTHONPATH=str(REPO / "src"),
        XDG_CACHE_HOME=str(tmp / "xdg-cache"),
        CUSHIP_NVCC="none",
    )
    env.update(extra)
    return env


class _Bad(http.server.BaseHTTPRequestHandler):
    mode = "500"
    hits: list[str]

    def do_GET(self) -> None:
        self.hits.append(self.path)
        if self.mode == "stall":
            time.sleep(5)
            return
        if self.mode == "garbage":
            body = b"\x00\x01 this is not an index {"
            self.send_response(200)
            self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
        else:
            body = b"nope"
            self.send_response(int(self.mode))
            self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        del format, args


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False


@contextmanager
def bad_server(mode: str) -> Iterator[tuple[str, list[str]]]:
    """A loopback server answering every GET with ``mode`` (404, 500, garbage, stall)."""
    hits: list[str] = []
    handler = type("Handler", (_Bad,), {"mode": mode, "hits": hits})
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple", hits
    finally:
        server.shutdown()
        server.server_close()


def indexed(wheels: Iterable[Path], site: Path) -> str:
    """``cuship index WHEELS -o SITE``: the file:// URL of its simple index."""
    from tests.integration import clirun

    clirun.cuship("index", *wheels, "-o", site, check=True)
    return (site / "simple").as_uri()


def resolved(project: str, index: str, env: dict[str, str]) -> dict[str, object]:
    """``cuship resolve PROJECT --index INDEX --json`` for the machine ``env`` describes."""
    from tests.integration import clirun

    done = clirun.cuship("resolve", project, "--index", index, "--json", env=env)
    assert done.returncode in (0, 1), done.stderr
    return dict(json.loads(done.stdout))


def first_rule(doc: dict[str, object]) -> str:
    """``ok`` when resolve chose a wheel, else the rule that rejected the first one."""
    rejected = doc["rejected"]
    assert isinstance(rejected, list)
    return "ok" if doc["chosen"] else str(rejected[0]["rule"])
