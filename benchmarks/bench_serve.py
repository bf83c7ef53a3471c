"""`cuship serve` under 200 concurrent clients, or beside slow clients, with `python -m http.server`.

    python3 benchmarks/bench_serve.py [--clients 200] [--requests 10] [--timeout 30]
    python3 benchmarks/bench_serve.py --attack [--attackers 33,300,1000] [--probes 20]

One small index (a project page and one wheel of --wheel-kb) is written to a temporary
directory and served on loopback by each contender in turn, each as its own process. 200 client
threads are released together; each makes --requests GETs on fresh connections, alternating the
project page and the wheel (pip's pattern: page, then file). A request succeeds with a 200 and
the whole body within --timeout seconds. Reported per contender: successes out of the total,
and the median and p99 latency over every request (a failed one counts with the time it took).

With --attack, each contender instead faces --attackers slow connections of each kind, opened
before a normal client starts: *drip* connections send one byte of a request head each second
and never finish it; *partial* ones send 23 bytes of a request line once and go silent. Then one
normal client makes --probes GETs, one after another (page and wheel in turn, --timeout each):
answered out of --probes, median and p99 latency. Contenders: cuship serve (the default 32
workers and 30 s idle timeout), `python -m http.server`, and waitress (a pure-Python WSGI
server that reads requests in its event loop before its worker threads see them; tried when
installed, with its limits raised to the same 4096 connections and 32 threads).
"""

from __future__ import annotations

import argparse
import http.client
import importlib.util
import itertools
import os
import random
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROJECT = "bench-serve"


@dataclass
class Outcome:
    ok: bool
    seconds: float


def make_site(root: Path, wheel_kb: int) -> tuple[Path, str]:
    """An index of one project with one wheel; (site, the wheel's filename)."""
    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(REPO / "src"))
    from tests.wheel_factory import make_wheel

    from cuship.index import write

    payload = random.Random(0).randbytes(wheel_kb * 1024)
    wheel = make_wheel(root / "wheels", PROJECT, "1.0", files={"bench_serve/blob.bin": payload})
    site = root / "site"
    write([wheel], site)
    return site, wheel.name


@contextmanager
def cuship_serve(site: Path, workers: int | None = None) -> Iterator[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    args = [sys.executable, "-m", "cuship", "serve", str(site), "--port", "0"]
    args += ["--workers", str(workers)] if workers else []
    with subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env) as proc:
        try:
            assert proc.stdout is not None
            yield proc.stdout.readline().decode().strip()
        finally:
            proc.terminate()
            proc.wait(timeout=10)


@contextmanager
def stdlib_serve(site: Path) -> Iterator[str]:
    args = [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1"]
    args += ["--directory", str(site)]
    with subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline().decode()  # "Serving HTTP on 127.0.0.1 port N (...)"
            yield f"http://127.0.0.1:{line.split(' port ')[1].split()[0]}/"
        finally:
            proc.terminate()
            proc.wait(timeout=10)


_WAITRESS = """
import mimetypes, pathlib, sys, waitress
root = pathlib.Path(sys.argv[1]).resolve()
def app(environ, start_response):
    path = (root / environ["PATH_INFO"].lstrip("/")).resolve()
    if path.is_dir():
        path = path / "index.html"
    if not path.is_relative_to(root) or not path.is_file():
        start_response("404 Not Found", [("Content-Length", "0")])
        return [b""]
    data = path.read_bytes()
    kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    start_response("200 OK", [("Content-Type", kind), ("Content-Length", str(len(data)))])
    return [data]
server = waitress.create_server(app, host="127.0.0.1", port=0, threads=32,
                                connection_limit=4096, channel_timeout=30)
print(f"http://127.0.0.1:{server.effective_port}/", flush=True)
server.run()
"""


@contextmanager
def waitress_serve(site: Path) -> Iterator[str]:
    args = [sys.executable, "-c", _WAITRESS, str(site)]
    with subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as proc:
        try:
            assert proc.stdout is not None
            yield proc.stdout.readline().decode().strip()
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def _has_waitress() -> bool:
    return importlib.util.find_spec("waitress") is not None


def _one(host: str, port: int, path: str, timeout: float) -> Outcome:
    start = time.perf_counter()
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        ok = response.status == 200
    except OSError:
        ok = False
    finally:
        connection.close()
    return Outcome(ok, time.perf_counter() - start)


def load(url: str, paths: list[str], clients: int, requests: int, timeout: float) -> list[Outcome]:
    """``clients`` threads released together, ``requests`` GETs each (paths in turn)."""
    parts = urllib.parse.urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    start = threading.Barrier(clients)
    outcomes: list[Outcome] = []
    lock = threading.Lock()

    def client() -> None:
        start.wait()
        mine = [_one(host, port, paths[i % len(paths)], timeout) for i in range(requests)]
        with lock:
            outcomes.extend(mine)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def _p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[98]


_LINE = b"GET /simple/bench-serve/ HTTP/1.1\r\nHost: x\r\nUser-Agent: drip\r\n"


def _open(address: tuple[str, int], count: int) -> list[socket.socket]:
    socks: list[socket.socket] = []
    for _ in range(count):
        try:
            socks.append(socket.create_connection(address, timeout=5))
        except OSError:
            break  # the server (or this process) took no more: the table says how many
    return socks


def _send_each(socks: list[socket.socket], data: bytes) -> None:
    for sock in socks:
        with suppress(OSError):
            sock.send(data)


def _drip(socks: list[socket.socket], stop: threading.Event) -> None:
    """One byte of a request head on each connection every second, never its end."""
    for i in itertools.count():
        _send_each(socks, _LINE[i % len(_LINE) : i % len(_LINE) + 1])
        if stop.wait(1.0):
            return


@contextmanager
def slow_clients(url: str, kind: str, count: int) -> Iterator[int]:
    """``count`` connections of ``kind`` (drip or partial) held open; yields how many opened."""
    parts = urllib.parse.urlsplit(url)
    socks = _open((parts.hostname or "127.0.0.1", parts.port or 80), count)
    stop = threading.Event()
    dripper = threading.Thread(target=_drip, args=(socks, stop), daemon=True)
    if kind == "drip":
        dripper.start()
    else:
        _send_each(socks, b"GET /simple/bench-ser")  # 23 bytes: half a request line
    try:
        time.sleep(2.0)  # every connection has sent something and reached the server
        yield len(socks)
    finally:
        stop.set()
        if dripper.is_alive():
            dripper.join()
        for sock in socks:
            sock.close()


def probe(url: str, paths: list[str], probes: int, timeout: float) -> list[Outcome]:
    """One normal client: ``probes`` GETs one after another."""
    parts = urllib.parse.urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    return [_one(host, port, paths[i % len(paths)], timeout) for i in range(probes)]


def _more_descriptors() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 8192 if hard == resource.RLIM_INFINITY else min(8192, hard)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def attack(site: Path, paths: list[str], opts: argparse.Namespace) -> None:
    """The table of a normal client's latency beside slow connections (see --attack)."""
    _more_descriptors()  # the client's sockets, and http.server's (it inherits the limit)
    contenders = [("cuship serve", partial(cuship_serve, site, opts.workers))]
    if not opts.only_cuship:
        contenders.append(("python -m http.server", partial(stdlib_serve, site)))
        if _has_waitress():
            contenders.append(("waitress", partial(waitress_serve, site)))
    counts = [int(n) for n in opts.attackers.split(",")]
    print(f"one client, {opts.probes} GETs in turn, timeout {opts.timeout:g} s each; loopback, "
          f"{os.cpu_count()} cores", flush=True)  # fmt: skip
    print(f"\n{'server':<24}{'attack':>16}{'answered':>10}{'median ms':>11}{'p99 ms':>10}")
    for name, server in contenders:
        for kind in ("drip", "partial"):
            for count in counts:
                with server() as url, slow_clients(url, kind, count) as opened:
                    outcomes = probe(url, paths, opts.probes, opts.timeout)
                times = [o.seconds * 1000 for o in outcomes]
                shown = f"{opened} {kind}"
                print(
                    f"{name:<24}{shown:>16}{f'{sum(o.ok for o in outcomes)}/{opts.probes}':>10}"
                    f"{statistics.median(times):>11.1f}{_p99(times):>10.1f}",
                    flush=True,
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--requests", type=int, default=10, help="per client")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per request")
    parser.add_argument("--wheel-kb", type=int, default=256)
    parser.add_argument("--workers", type=int, default=None, help="cuship serve --workers")
    parser.add_argument("--only-cuship", action="store_true", help="skip the other servers")
    parser.add_argument("--attack", action="store_true", help="slow clients, not load")
    parser.add_argument("--attackers", default="33,300,1000", help="slow connections, by count")
    parser.add_argument("--probes", type=int, default=20, help="GETs of the normal client")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cuship-bench-serve-") as tmp:
        site, wheel = make_site(Path(tmp), opts.wheel_kb)
        paths = [f"/simple/{PROJECT}/", f"/files/{wheel}"]
        if opts.attack:
            attack(site, paths, opts)
            return
        total = opts.clients * opts.requests
        shape = f"{paths[0]} and a {opts.wheel_kb} kB wheel"
        print(f"{opts.clients} clients x {opts.requests} requests ({shape}), loopback, "
              f"{os.cpu_count()} cores", flush=True)  # fmt: skip
        print(f"\n{'server':<30}{'ok':>12}{'median ms':>12}{'p99 ms':>10}{'wall s':>9}")
        contenders = [("cuship serve", partial(cuship_serve, site, opts.workers))]
        if not opts.only_cuship:
            contenders.append(("python -m http.server", partial(stdlib_serve, site)))
        for name, server in contenders:
            with server() as url:
                began = time.perf_counter()
                outcomes = load(url, paths, opts.clients, opts.requests, opts.timeout)
                wall = time.perf_counter() - began
            times = [o.seconds * 1000 for o in outcomes]
            ok = sum(o.ok for o in outcomes)
            print(
                f"{name:<30}{f'{ok}/{total}':>12}{statistics.median(times):>12.1f}"
                f"{_p99(times):>10.1f}{wall:>9.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
