"""Headless Chromium driven over the DevTools protocol on a pipe (stdlib only), and a PNG decoder.

``--remote-debugging-pipe`` makes Chromium read commands on fd 3 and write answers and events on
fd 4, each message a JSON text ended by a NUL byte; no port, no websocket library.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

INSTALL_HINT = (
    "chromium not found on PATH: the dashboard test needs headless Chromium; the README's test "
    "command installs it (tools/test-deps runs `apt-get install -y --no-install-recommends "
    "chromium` on Debian/Ubuntu as root); elsewhere install Chromium so that `chromium` is on PATH"
)


def chromium_path() -> str:
    """The Chromium binary; the test FAILS (never skips) when it is missing."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail(INSTALL_HINT)
    return found


class Page:
    """One tab: send commands, collect events (console errors, exceptions, failed loads)."""

    def __init__(self, proc: subprocess.Popen[bytes], to_browser: int, from_browser: int) -> None:
        self.proc, self._out, self._in = proc, to_browser, from_browser
        self._buffer = b""
        self._next_id = 0
        self.session: str | None = None
        self.events: list[dict[str, Any]] = []

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._in], [], [], max(left, 0.0))
            if not ready:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self._in, 1 << 20)
            if not chunk:
                raise ConnectionError(f"Chromium closed the pipe (exit {self.proc.poll()})")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        parsed: dict[str, Any] = json.loads(message)
        return parsed

    def call(self, method: str, timeout: float = 20.0, **params: Any) -> dict[str, Any]:
        """Send one command (to the attached tab once there is one) and return its result."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if self.session is not None and not method.startswith(("Target.", "Browser.")):
            message["sessionId"] = self.session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            answer = self._read_message(deadline)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method} failed: {answer['error']}")
                result: dict[str, Any] = answer.get("result", {})
                return result
            if "method" in answer:
                self.events.append(answer)

    def wait_for(self, event: str, timeout: float = 20.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        seen = len(self.events)
        while True:
            for found in self.events[seen:]:
                if found["method"] == event:
                    return found
            seen = len(self.events)
            answer = self._read_message(deadline)
            if "method" in answer:
                self.events.append(answer)

    def open(self, url: str) -> None:
        """Navigate and wait for the load event."""
        self.call("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression!r} threw: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, clip: dict[str, float]) -> bytes:
        data = self.call("Page.captureScreenshot", format="png", clip={**clip, "scale": 1})
        return base64.b64decode(data["data"])

    def problems(self) -> list[str]:
        """Console errors, uncaught exceptions, failed loads and dialogs seen so far."""
        out = []
        for event in self.events:
            method, params = event["method"], event.get("params", {})
            if method == "Runtime.exceptionThrown":
                out.append(f"exception: {params['exceptionDetails']}")
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                out.append(f"console.{params['type']}: {params.get('args')}")
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                out.append(f"log: {params['entry'].get('text')} {params['entry'].get('url', '')}")
            elif method == "Page.javascriptDialogOpening":
                out.append(f"dialog: {params.get('message')}")
        return out


# Puts the pipe ends on fds 3 and 4, where --remote-debugging-pipe expects them, then runs Chromium.
_TRAMPOLINE = (
    "import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4); "
    "os.execv(sys.argv[3], sys.argv[3:])"
)


def _high(fd: int) -> int:
    lifted = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return lifted


@contextmanager
def chromium(profile: Path, width: int = 1280, height: int = 1000) -> Iterator[Page]:
    """A headless Chromium with one tab attached, its console and log watched."""
    # Lift the pipe ends above 4 so that moving them onto fds 3 and 4 can never clobber one.
    to_r, to_w, from_r, from_w = (_high(fd) for fd in (*os.pipe(), *os.pipe()))
    args = ["--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe"]
    args += [f"--user-data-dir={profile}", "--no-first-run", "--no-default-browser-check"]
    args += ["--disable-extensions", "--hide-scrollbars", "--mute-audio", "about:blank"]
    proc = subprocess.Popen(
        [sys.executable, "-c", _TRAMPOLINE, str(to_r), str(from_w), chromium_path(), *args],
        pass_fds=(to_r, from_w),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(to_r)
    os.close(from_w)
    page = Page(proc, to_w, from_r)
    try:
        target = page.call("Target.createTarget", url="about:blank")["targetId"]
        page.session = page.call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log"):
            page.call(f"{domain}.enable")
        page.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )
        yield page
    finally:
        with suppress(OSError, RuntimeError, TimeoutError, ConnectionError):
            page.call("Browser.close", timeout=5)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        os.close(to_w)
        os.close(from_r)


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def _unfilter(kind: int, row: bytearray, prior: bytes, bpp: int) -> None:
    if kind == 2:
        row[:] = bytes((x + y) & 0xFF for x, y in zip(row, prior, strict=True))
        return
    for i in range(len(row)):
        left = row[i - bpp] if i >= bpp else 0
        if kind == 1:
            row[i] = (row[i] + left) & 0xFF
        elif kind == 3:
            row[i] = (row[i] + ((left + prior[i]) >> 1)) & 0xFF
        elif kind == 4:
            up_left = prior[i - bpp] if i >= bpp else 0
            row[i] = (row[i] + _paeth(left, prior[i], up_left)) & 0xFF


def decode_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB bytes) of an 8-bit RGB or RGBA PNG, with the stdlib only."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour in (2, 6), f"unsupported PNG: depth {depth}, colour type {colour}"
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    prior, rows = bytes(stride), []
    for y in range(height):
        start = y * (stride + 1)
        row = bytearray(raw[start + 1 : start + 1 + stride])
        _unfilter(raw[start], row, prior, bpp)
        prior = bytes(row)
        rgb = row if bpp == 3 else bytearray(b for i, b in enumerate(row) if i % 4 != 3)
        rows.append(bytes(rgb))
    return width, height, rows
