"""`cuship serve` under 200 concurrent clients, beside `python -m http.server` on the same site.

    python3 benchmarks/bench_serve.py [--clients 200] [--requests 10] [--timeout 30]

One small index (a project page and one wheel of --wheel-kb) is written to a temporary
directory and served on loopback by each contender in turn, each as its own process. 200 client
threads are released together; each makes --requests GETs on fresh connections, alternating the
project page and the wheel (pip's pattern: page, then file). A request succeeds with a 200 and
the whole body within --timeout seconds. Reported per contender: successes out of the total,
and the median and p99 latency over every request (a failed one counts with the time it took).
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--requests", type=int, default=10, help="per client")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per request")
    parser.add_argument("--wheel-kb", type=int, default=256)
    parser.add_argument("--workers", type=int, default=None, help="cuship serve --workers")
    parser.add_argument("--only-cuship", action="store_true", help="skip python -m http.server")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cuship-bench-serve-") as tmp:
        site, wheel = make_site(Path(tmp), opts.wheel_kb)
        paths = [f"/simple/{PROJECT}/", f"/files/{wheel}"]
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
