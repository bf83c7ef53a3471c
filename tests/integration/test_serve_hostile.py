"""`cuship serve` against hostile clients (issue 16): each row of the adversarial pass is a test.

The server runs as a user runs it (`python -m cuship serve SITE`), on loopback, with a short
idle timeout so that what it must close it closes within the test. Its stderr is kept: every
malformed request is one line there, and no line is a traceback.
"""

from __future__ import annotations

import contextlib
import http.client
import itertools
import resource
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cuship.cli import main
from cuship.index import write
from cuship.serve.site import ServeLimits, serve
from tests.integration.indexsite import clean_env
from tests.wheel_factory import make_wheel

IDLE_TIMEOUT = 2.0
WORKERS = 32
WHEEL = "pkg-1.0-py3-none-any.whl"


@dataclass
class Server:
    url: str
    host: str
    port: int
    proc: subprocess.Popen[bytes]
    stderr: Path

    def log(self) -> list[str]:
        return self.stderr.read_text(errors="replace").splitlines()

    def threads(self) -> int:
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        return int(next(line for line in status.splitlines() if line.startswith("Threads:"))[8:])


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("serve-hostile")
    site = root / "site"
    write([make_wheel(root / "wheels", "pkg", "1.0")], site)
    secret = root / "outside-secret.txt"
    secret.write_text("the bytes outside SITE\n")
    (site / "files" / "escape.txt").symlink_to(secret)
    (site / "files" / "escape-dir").symlink_to(root, target_is_directory=True)
    (site / ".cuship-cache").mkdir()  # as an older cuship left it inside the site
    (site / ".cuship-cache" / "scan.sqlite").write_bytes(b"SQLite format 3\0")
    (site / "files" / ".hidden").write_text("hidden\n")
    return site


@pytest.fixture(scope="module")
def server(site: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    stderr = tmp_path_factory.mktemp("serve-log") / "stderr.txt"
    env = clean_env(stderr.parent, GITHUB_ACTIONS="")
    args = [sys.executable, "-m", "cuship", "serve", str(site), "--port", "0"]
    args += ["--idle-timeout", str(IDLE_TIMEOUT), "--workers", str(WORKERS)]
    with stderr.open("wb") as err:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err, env=env)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().decode().strip()
        parts = urllib.parse.urlsplit(url)
        assert parts.hostname == "127.0.0.1" and parts.port  # loopback by default
        yield Server(url, parts.hostname, parts.port, proc, stderr)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()
    assert "Traceback" not in stderr.read_text(errors="replace")


def _raw(server: Server | tuple[str, int], request: bytes) -> tuple[int, bytes]:
    """Send ``request`` as it is; (status, whole response). Status 0: no status line."""
    address = server if isinstance(server, tuple) else (server.host, server.port)
    with socket.create_connection(address, timeout=10) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    response = b"".join(chunks)
    head = response.split(b"\r\n", 1)[0].split()
    status = int(head[1]) if len(head) >= 2 and head[0].startswith(b"HTTP/") else 0
    return status, response


def _get(server: Server | tuple[str, int], path: str) -> tuple[int, bytes]:
    return _raw(server, f"GET {path} HTTP/1.0\r\nHost: x\r\n\r\n".encode())


def test_it_serves_the_index(server: Server) -> None:
    status, body = _get(server, "/simple/pkg/")
    assert status == 200 and WHEEL.encode() in body
    assert _get(server, f"/files/{WHEEL}")[0] == 200


@pytest.mark.parametrize(
    "path",
    [
        "/files/escape.txt",  # a symlink inside SITE to a file outside it
        "/files/escape-dir/outside-secret.txt",  # through a symlinked directory
        "/.cuship-cache/scan.sqlite",
        "/files/.hidden",
        "/%2ecuship-cache/scan.sqlite",
        "/files/",  # a directory without index.html: no listing
        "/../outside-secret.txt",
        "/%2e%2e/outside-secret.txt",
    ],
)
def test_nothing_outside_the_published_index_is_served(server: Server, path: str) -> None:
    status, body = _get(server, path)
    assert status == 404
    assert b"outside SITE" not in body and b"SQLite" not in body and b"hidden\n" not in body
    assert b"escape.txt" not in body and WHEEL.encode() not in body  # no listing either


@pytest.mark.parametrize(
    ("request_bytes", "status", "marker"),
    [
        (b"GET /m414" + b"a" * 10_000 + b" HTTP/1.0\r\n\r\n", 414, "m414"),
        (b"GET /files/%00m400 HTTP/1.0\r\n\r\n", 400, "m400"),
        (b"GET /m505 HTTP/9.9\r\n\r\n", 505, "m505"),
        (b"GARBAGE-m400g\r\n\r\n", 400, "m400g"),
        (b"\x16\x03\x01 m400tls \x00\xff\r\n\r\n", 400, "m400tls"),
        (b"DELETE /m501 HTTP/1.0\r\n\r\n", 501, "m501"),
    ],
    ids=["10000-char-url", "null-byte", "http-9.9", "garbage", "tls-hello", "method"],
)
def test_a_malformed_request_gets_its_status_and_one_log_line(
    server: Server, request_bytes: bytes, status: int, marker: str
) -> None:
    assert _raw(server, request_bytes)[0] == status
    deadline = time.monotonic() + 5
    while not (lines := [line for line in server.log() if marker in line]):
        assert time.monotonic() < deadline, f"no log line for {marker}"
        time.sleep(0.05)
    assert len(lines) == 1 and lines[0].startswith("warning: ") and str(status) in lines[0]
    assert len(lines[0]) < 400  # a 10,000-character path is cut short


def test_an_idle_connection_is_closed_after_the_timeout(server: Server) -> None:
    with socket.create_connection((server.host, server.port), timeout=IDLE_TIMEOUT + 5) as sock:
        start = time.monotonic()
        assert sock.recv(1) == b""
    assert IDLE_TIMEOUT - 0.5 < time.monotonic() - start < IDLE_TIMEOUT + 3


def test_a_client_stalling_mid_request_frees_its_worker(server: Server) -> None:
    with socket.create_connection((server.host, server.port), timeout=IDLE_TIMEOUT + 5) as sock:
        sock.sendall(b"GET /simple/pkg/ HTTP/1.0\r\n")  # and never the blank line
        start = time.monotonic()
        assert sock.recv(65536) == b""  # closed by the server, no response to half a request
        assert IDLE_TIMEOUT - 0.5 < time.monotonic() - start < IDLE_TIMEOUT + 3
    assert _get(server, "/simple/pkg/")[0] == 200


@pytest.mark.parametrize("port", ["99999", "-1", "65536"])
def test_a_bad_port_is_a_usage_error(
    site: Path, port: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", str(site), "--port", port]) == 2
    err = capsys.readouterr().err
    assert "--port" in err and "Traceback" not in err


@pytest.fixture
def many_descriptors() -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 4096 if hard == resource.RLIM_INFINITY else min(4096, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _client(server: Server, start: threading.Barrier, results: list[int]) -> None:
    start.wait()
    for path in ("/simple/pkg/", f"/files/{WHEEL}"):
        connection = http.client.HTTPConnection(server.host, server.port, timeout=20)
        try:
            connection.request("GET", path)
            response = connection.getresponse()
            response.read()
            results.append(response.status)
        except OSError:
            results.append(0)
        finally:
            connection.close()


@pytest.mark.usefixtures("many_descriptors")
def test_load_200_concurrent_clients_beside_1000_idle_connections(server: Server) -> None:
    idle = [socket.create_connection((server.host, server.port), timeout=10) for _ in range(1000)]
    try:
        opened = time.monotonic()
        start = threading.Barrier(200)
        results: list[int] = []
        clients = [
            threading.Thread(target=_client, args=(server, start, results)) for _ in range(200)
        ]
        for client in clients:
            client.start()
        for client in clients:
            client.join(timeout=30)
        assert results.count(200) == 400, f"answered: {sorted(set(results))}"
        assert server.threads() <= WORKERS + 8  # a fixed pool, not a thread per connection
        for sock in idle:  # the server closes every idle connection by itself
            sock.settimeout(max(0.1, opened + IDLE_TIMEOUT + 5 - time.monotonic()))
            assert sock.recv(1) == b""
    finally:
        for sock in idle:
            sock.close()
    assert server.threads() <= WORKERS + 8
    assert _get(server, "/simple/pkg/")[0] == 200


def test_past_max_connections_a_new_one_gets_503_and_the_rest_are_served(site: Path) -> None:
    limits = ServeLimits(workers=2, idle_timeout=IDLE_TIMEOUT, max_connections=5)
    with serve(site, limits=limits) as running:
        parts = urllib.parse.urlsplit(running.url)
        host, port = parts.hostname or "", parts.port or 0
        idle = [socket.create_connection((host, port), timeout=10) for _ in range(5)]
        try:
            time.sleep(0.3)  # all five accepted and waiting
            with socket.create_connection((host, port), timeout=10) as extra:
                assert extra.recv(100).startswith(b"HTTP/1.0 503 ")
        finally:
            for sock in idle:
                sock.close()
        time.sleep(0.3)  # the server sees them closed
        assert _get((host, port), "/simple/pkg/")[0] == 200


# Slow and partial clients (issue 34): they hold a descriptor each, never a worker.
SLOW_IDLE = 10.0  # the idle timeout of the server below: answers must come well before it
ANSWERED_WITHIN = 3.0  # seconds: a bound for "answered at all", far under SLOW_IDLE


@pytest.fixture
def patient(site: Path) -> Iterator[tuple[str, int]]:
    """A server with the default 32 workers and a long idle timeout."""
    with serve(site, limits=ServeLimits(workers=WORKERS, idle_timeout=SLOW_IDLE)) as running:
        parts = urllib.parse.urlsplit(running.url)
        yield parts.hostname or "", parts.port or 0


@contextlib.contextmanager
def _dripping(address: tuple[str, int], count: int, every: float) -> Iterator[None]:
    """``count`` connections, each sending one byte of a request line every ``every`` s."""
    line = b"GET /simple/pkg/ HTTP/1.0\r\nHost: x\r\n"  # never the blank line that ends it
    socks = [socket.create_connection(address, timeout=10) for _ in range(count)]
    stop = threading.Event()

    def drip() -> None:
        for i in itertools.count():
            for sock in socks:
                with contextlib.suppress(OSError):
                    sock.send(line[i % len(line) : i % len(line) + 1])
            if stop.wait(every):
                return

    dripper = threading.Thread(target=drip)
    dripper.start()
    try:
        time.sleep(every * 2)  # every connection has sent something
        yield
    finally:
        stop.set()
        dripper.join()
        for sock in socks:
            sock.close()


def _answered(address: tuple[str, int], path: str = "/simple/pkg/") -> int:
    """The status of a plain GET, which must come within ANSWERED_WITHIN seconds."""
    connection = http.client.HTTPConnection(*address, timeout=ANSWERED_WITHIN)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def test_33_dripping_connections_leave_a_normal_client_answered(
    patient: tuple[str, int],
) -> None:
    with _dripping(patient, WORKERS + 1, every=0.5):
        assert [_answered(patient), _answered(patient, f"/files/{WHEEL}")] == [200, 200]


def test_40_partial_request_lines_gone_silent_leave_the_next_request_answered(
    patient: tuple[str, int],
) -> None:
    silent = [socket.create_connection(patient, timeout=10) for _ in range(40)]
    try:
        for sock in silent:
            sock.sendall(b"GET /simple/pkg/ HTTP/1")  # 23 bytes of a request line, then nothing
        time.sleep(0.3)
        assert _answered(patient) == 200  # long before the idle timeout frees anything
    finally:
        for sock in silent:
            sock.close()


def test_a_request_head_must_arrive_whole_within_the_idle_timeout(server: Server) -> None:
    """The deadline is for the whole head, not for each read: a drip is cut off in time."""
    with socket.create_connection((server.host, server.port), timeout=1) as sock:
        start = time.monotonic()
        closed = False
        for byte in itertools.cycle(b"GET /simple/pkg/ HTTP/1.0\r\nX: y\r\n"):
            assert time.monotonic() - start < IDLE_TIMEOUT + 3, "still open past the deadline"
            try:
                sock.send(bytes([byte]))
                closed = sock.recv(1) == b""  # nothing comes back but the close
            except TimeoutError:
                continue  # a second went by: drip on
            except OSError:
                closed = True
            if closed:
                break
    assert time.monotonic() - start > IDLE_TIMEOUT - 0.5


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"GET /simple/%ff%fe/ HTTP/1.0\r\n\r\n", 400),  # not UTF-8 once decoded
        (b"GET /simple/pkg/\r\n", 400),  # HTTP/0.9: no headers follow, answered at once
        (b"\r\n\r\n", 400),  # an empty request line
    ],
    ids=["percent-ff-fe", "http-0.9", "empty-line"],
)
def test_every_malformed_request_gets_a_4xx_at_once(
    patient: tuple[str, int], request_bytes: bytes, status: int
) -> None:
    with socket.create_connection(patient, timeout=ANSWERED_WITHIN) as sock:
        sock.sendall(request_bytes)
        first = sock.recv(65536)  # the client keeps its connection open: no EOF to wait for
    assert first.startswith(f"HTTP/1.0 {status} ".encode())
