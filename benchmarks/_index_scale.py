"""The workload and instruments of bench_index_scale.py: synthetic wheels, site copies, ``cuship serve`` behind a counting reverse proxy, and the results table.
Kept apart from the script so that tests reach the pure parts (the wheel plan, a wheel's members,
the /proc/mounts lookup, the table) without running a benchmark.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.client
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit

__all__ = [
    "LABELS",
    "PER_PROJECT",
    "CountingProxy",
    "Outcome",
    "Results",
    "Spawner",
    "WheelSpec",
    "copy_site",
    "fresh",
    "generate",
    "mount_of",
    "plan_wheels",
    "served",
    "spec_at",
    "table",
    "wheel_members",
    "write_wheel",
]

LABELS = ("cu128", "cu130", "cu128torch2.8", "cu130torch2.9")
PER_PROJECT = 10
PAYLOAD_BYTES = 2048


@dataclass(frozen=True, slots=True)
class WheelSpec:
    """One synthetic wheel: a project and a version (with its local label, if any)."""

    project: str
    version: str

    @property
    def dist(self) -> str:
        return self.project.replace("-", "_")

    @property
    def filename(self) -> str:
        return f"{self.dist}-{self.version}-py3-none-any.whl"


def spec_at(i: int) -> WheelSpec:
    """Wheel ``i``: slot ``i % 10`` of project ``i // 10``; slots 0-5 are plain releases
    1.0.0 … 1.4.0 and 2.0.0, slots 6-9 are 2.0.0 with each local label."""
    project, slot = divmod(i, PER_PROJECT)
    if slot < 5:
        version = f"1.{slot}.0"
    elif slot == 5:
        version = "2.0.0"
    else:
        version = f"2.0.0+{LABELS[slot - 6]}"
    return WheelSpec(f"scale-pkg{project:05d}", version)


def plan_wheels(count: int) -> list[WheelSpec]:
    """The ``count`` wheels of one size, in ``ceil(count / 10)`` projects."""
    return [spec_at(i) for i in range(count)]


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode()


def wheel_members(spec: WheelSpec, payload: bytes) -> list[tuple[str, bytes]]:
    """The archive members of ``spec``'s wheel, RECORD (with real hashes) last."""
    info = f"{spec.dist}-{spec.version}.dist-info"
    metadata = (
        f"Metadata-Version: 2.1\nName: {spec.project}\nVersion: {spec.version}\n"
        "Requires-Python: >=3.9\n"
    )
    members = [
        (f"{spec.dist}/__init__.py", f"VERSION = {spec.version!r}\n".encode()),
        (f"{spec.dist}/_blob.bin", payload),
        (f"{info}/METADATA", metadata.encode()),
        (
            f"{info}/WHEEL",
            b"Wheel-Version: 1.0\nGenerator: bench_index_scale\nRoot-Is-Purelib: true\n"
            b"Tag: py3-none-any\n",
        ),
    ]
    record = "".join(f"{name},{_record_hash(data)},{len(data)}\n" for name, data in members)
    return [*members, (f"{info}/RECORD", f"{record}{info}/RECORD,,\n".encode())]


ZIP_DATE = (2020, 1, 1, 0, 0, 0)  # every member's date: the same bytes on every run


def write_wheel(directory: Path, spec: WheelSpec, payload: bytes) -> Path:
    """Write ``spec``'s wheel (stored, not deflated) into ``directory``, mode 0644; the same
    ``spec`` and ``payload`` give the same bytes."""
    path = directory / spec.filename
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, data in wheel_members(spec, payload):
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
    path.chmod(0o644)  # cuship hard-links only 0644 wheels into the site
    return path


def generate(directory: Path, count: int) -> tuple[list[Path], bool]:
    """The ``count`` wheels in ``directory`` and whether they were written now: they are written
    once (a marker beside the directory says complete) and reused by later runs."""
    specs = plan_wheels(count)
    marker = directory.with_name(directory.name + ".complete")
    made = not (marker.is_file() and marker.read_text() == f"{count}\n")
    if made:
        marker.unlink(missing_ok=True)
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        rng = random.Random(count)
        for spec in specs:
            write_wheel(directory, spec, rng.randbytes(PAYLOAD_BYTES))
        marker.write_text(f"{count}\n")
    return [directory / spec.filename for spec in specs], made


def mount_of(path: str, mounts: str) -> tuple[str, str]:
    """(filesystem type, mount point) of the longest mount in ``mounts`` (/proc/mounts text)
    that holds the absolute ``path``; ("unknown", "") when none does."""
    best = ("unknown", "")
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best[1]):
            best = (fields[2], point)
    return best


class Outcome(NamedTuple):
    seconds: float
    returncode: int
    peak_mb: float
    stderr: str


# Peak RSS is ru_maxrss from wait4, and Linux carries a process's high-water RSS across exec:
# a process forked (or vforked) from this bench, which holds a 50,000-wheel site's bytes, starts
# with this bench's RSS as its peak. So cuship runs are started by a small spawner process,
# itself started while this bench is small; it times each run and reports its usage.
_SPAWNER = """\
import json, os, subprocess, sys, tempfile, time
for line in sys.stdin:
    job = json.loads(line)
    with tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(
            job["argv"], env=job["env"], cwd=job.get("cwd"), stdout=subprocess.DEVNULL, stderr=err
        )
        _pid, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
        err.seek(0)
        text = err.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    print(json.dumps([seconds, code, usage.ru_maxrss / 1024, text]), flush=True)
"""


class Spawner:
    """The small process that starts each timed run (see _SPAWNER)."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _SPAWNER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(self, argv: Sequence[str], env: dict[str, str], cwd: Path | None = None) -> Outcome:
        if self._proc is None:
            self.start()
        assert self._proc is not None and self._proc.stdin and self._proc.stdout
        job = {"argv": list(argv), "env": env, "cwd": None if cwd is None else str(cwd)}
        self._proc.stdin.write(json.dumps(job) + "\n")
        self._proc.stdin.flush()
        seconds, code, peak, text = json.loads(self._proc.stdout.readline())
        return Outcome(seconds, code, peak, text)

    def close(self) -> None:
        if self._proc is not None:
            self._proc.communicate()  # its stdin closed: the spawner's loop ends
            self._proc = None


def fresh(path: Path) -> Path:
    """``path`` removed (its scan cache with it: a site keeps it in its own state folder),
    its parent made, dirty pages synced."""
    shutil.rmtree(path, ignore_errors=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    os.sync()
    return path


def _link_wheels(src: str, dst: str) -> str:
    if src.endswith(".whl"):
        os.link(src, dst)
    else:
        shutil.copy2(src, dst)
    return dst


def copy_site(site: Path, dest: Path) -> Path:
    """A fresh copy of ``site`` and its scan cache (in its state folder) at ``dest``: pages
    copied, wheels linked."""
    fresh(dest)
    shutil.copytree(site, dest, copy_function=_link_wheels)
    os.sync()
    return dest


_HOP = {"connection", "keep-alive", "transfer-encoding", "host", "te", "upgrade", "server", "date"}


class CountingProxy(ThreadingHTTPServer):
    """A loopback reverse proxy to ``upstream`` that counts requests and response body bytes."""

    daemon_threads = True

    def __init__(self, upstream: str) -> None:
        super().__init__(("127.0.0.1", 0), _ProxyHandler)
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self.lock = threading.Lock()
        self.requests = 0
        self.body_bytes = 0

    def reset(self) -> None:
        with self.lock:
            self.requests = self.body_bytes = 0


class _ProxyHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        proxy = self.server
        assert isinstance(proxy, CountingProxy)
        conn = http.client.HTTPConnection(*proxy.upstream, timeout=60)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
            conn.request("GET", self.path, headers=headers)
            answer = conn.getresponse()
            body = answer.read()
        finally:
            conn.close()
        with proxy.lock:
            proxy.requests += 1
            proxy.body_bytes += len(body)
        self.send_response(answer.status, answer.reason)
        for key, value in answer.getheaders():
            if key.lower() not in _HOP and key.lower() != "content-length":
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def served(site: Path, env: dict[str, str]) -> Iterator[CountingProxy]:
    """``cuship serve site`` behind a counting proxy, both stopped on the way out."""
    argv = [sys.executable, "-m", "cuship", "serve", str(site), "--port", "0"]
    server = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().decode().strip()
        if not url.startswith("http"):
            raise SystemExit(f"cuship serve did not print its URL (got {url!r})")
        proxy = CountingProxy(url)
        thread = threading.Thread(target=proxy.serve_forever, daemon=True)
        thread.start()
        try:
            yield proxy
        finally:
            proxy.shutdown()
            proxy.server_close()
    finally:
        server.terminate()
        server.wait()


@dataclass
class Results:
    """Raw samples and notes, per measure and size."""

    samples: dict[str, dict[int, list[float]]] = field(default_factory=dict)
    notes: dict[str, dict[int, str]] = field(default_factory=dict)

    def add(self, measure: str, size: int, value: float) -> None:
        self.samples.setdefault(measure, {}).setdefault(size, []).append(value)

    def note(self, measure: str, size: int, text: str) -> None:
        self.notes.setdefault(measure, {})[size] = text

    def value(self, measure: str, size: int) -> float | None:
        values = self.samples.get(measure, {}).get(size)
        if not values:
            return None
        return max(values) if measure.startswith("rss.") else statistics.median(values)


Row = tuple[str, str, str, str]  # label, measure (or "a/b" for a ratio), unit, goal
ROWS: list[Row] = [
    ("floor (benchmarks/_floor.py), cold", "cold.floor", "s", ""),
    ("cuship index, cold", "cold.cuship", "s", ""),
    ("  cuship cold / floor", "cold.cuship/cold.floor", "x", "<= 1.5x"),
    ("  cuship / floor, same repeat (median)", "cold.pair", "x", "<= 1.5x"),
    ("hash list + dumb-pypi, cold", "cold.dumb", "s", ""),
    ("  dumb-pypi / cuship cold", "cold.dumb/cold.cuship", "x", "> 1x"),
    ("peak RSS, cuship index cold", "rss.cold", "MB", "< 300 MB"),
    *(
        row
        for op in ("+1 wheel", "+1 project", "yank 1 wheel")
        for row in (
            (f"{op} (CLI)", f"inc.{op}.cli", "s", "<= 0.1 s, flat" if op == "+1 wheel" else ""),
            (f"{op} (in-process)", f"inc.{op}.lib", "s", ""),
            (f"  {op}: floor", f"inc.{op}.floor", "s", ""),
            (f"  {op}: CLI / floor", f"inc.{op}.cli/inc.{op}.floor", "x", ""),
        )
    ),
    ("+1 wheel (dumb-pypi partial rebuild)", "inc.dumb", "s", ""),
    ("folder rerun: cold index of the folder", "rerun.cold", "s", ""),
    ("  floor: the folder listed, each stated", "rerun.floor.stat", "s", ""),
    ("  stat floor: find -newer", "rerun.floor.find", "s", ""),
    ("  unchanged, absolute folder", "rerun.same.folder", "s", ""),
    ("    / cold", "rerun.same.folder/rerun.cold", "x", "<= 0.1x"),
    ("    / floor", "rerun.same.folder/rerun.floor.stat", "x", ""),
    ("    / find -newer", "rerun.same.folder/rerun.floor.find", "x", ""),
    ("  unchanged, relative folder", "rerun.same.relative", "s", ""),
    ("  unchanged, file list (wheels/*.whl)", "rerun.same.list", "s", ""),
    ("  +1 wheel, absolute folder", "rerun.plus1.folder", "s", ""),
    ("    / cold", "rerun.plus1.folder/rerun.cold", "x", "<= 0.1x"),
    ("peak RSS, +1 wheel (CLI)", "rss.+1 wheel", "MB", "< 300 MB"),
    ("resolve: cuship resolve (no download)", "resolve.cuship", "s", ""),
    ("resolve: cuship resolve + download", "resolve.cuship+dl", "s", ""),
    ("resolve: pip download --no-deps", "resolve.pip", "s", ""),
    ("  cuship resolve+download / pip", "resolve.cuship+dl/resolve.pip", "x", "<= 0.5x"),
    ("bytes fetched: cuship resolve", "bytes.cuship", "B", "flat"),
    ("bytes fetched: cuship resolve+download", "bytes.cuship+dl", "B", "flat"),
    ("bytes fetched: pip download", "bytes.pip", "B", ""),
    ("requests: cuship resolve+download", "requests.cuship+dl", "n", ""),
    ("requests: pip download", "requests.pip", "n", ""),
]


def row_value(results: Results, measure: str, size: int) -> float | None:
    if "/" not in measure:
        return results.value(measure, size)
    top, bottom = (results.value(m, size) for m in measure.split("/"))
    return top / bottom if top is not None and bottom else None


def cell(results: Results, measure: str, unit: str, size: int) -> str:
    value = row_value(results, measure, size)
    if value is None:
        return "n/a" if results.notes.get(measure, {}).get(size) else "-"
    formats = {"s": "{:.3f}", "x": "{:.2f}x", "MB": "{:.0f}", "B": "{:,.0f}", "n": "{:.0f}"}
    return formats[unit].format(value)


def table(results: Results, sizes: Sequence[int]) -> str:
    """The results as a text table: one column per size, the growth from the first size to the
    last, the goal; then every note."""
    head = f"{'measure (median; s unless said)':<40}" + "".join(f"{n:>13,}" for n in sizes)
    lines = [f"{head}{'growth':>9}  goal"]
    for label, measure, unit, goal in ROWS:
        cells = "".join(f"{cell(results, measure, unit, n):>13}" for n in sizes)
        first, last = (row_value(results, measure, n) for n in (sizes[0], sizes[-1]))
        growth = f"{last / first:.1f}x" if first and last and unit != "x" else ""
        lines.append(f"{label:<40}{cells}{growth:>9}  {goal}".rstrip())
    for measure, by_size in results.notes.items():
        lines += [f"note: {measure} @ {n:,}: {text}" for n, text in by_size.items()]
    return "\n".join(lines)
