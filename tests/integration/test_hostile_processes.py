"""Issue 43's cases that need real processes: a target interpreter that prints gigabytes, a
server whose Content-Length is ``²``, a check whose --baseline is a FIFO, and the nvcc shim
keeping an option's value and seeing arch flags in an options file; each with its exit code
and its line, in bounded time and memory."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from cuship import process
from cuship.builder.run import nvcc_shim
from cuship.resolve.target import _probe

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO / "src")}


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


PRINTS = "import sys\nchunk = b'x' * (1 << 20)\nfor _ in range({mib}):\n    sys.stdout.buffer.write(chunk)\n"


def test_a_child_that_prints_gigabytes_costs_what_is_kept() -> None:
    before = _peak_mib()
    started = time.monotonic()
    done = process.run([sys.executable, "-c", PRINTS.format(mib=3072)], keep=1 << 20,
                       stop_past_keep=True, timeout=120)  # fmt: skip
    assert done.cut and len(done.stdout) < (1 << 20) + (128 << 10)
    assert time.monotonic() - started < 60  # ended once past the bound, not read to the end
    kept = process.run([sys.executable, "-c", PRINTS.format(mib=256)], keep=1 << 20, timeout=120)
    assert kept.ok and kept.cut and "MiB not kept ..." in kept.stdout  # read to its end
    assert _peak_mib() - before < 200  # not the 3 GB nor the 256 MB printed


def test_a_target_interpreter_that_prints_3_gb_is_no_answer(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text(f"#!{sys.executable}\n" + PRINTS.format(mib=3072))
    fake.chmod(0o755)
    started = time.monotonic()
    answer = _probe(str(fake), "CUSHIP_TARGET_PYTHON", "/nowhere")
    assert answer == f"CUSHIP_TARGET_PYTHON ({fake}) did not answer: it printed more than 1 MiB"
    assert time.monotonic() - started < 60
    garbage = tmp_path / "python2"
    garbage.write_text(f"#!{sys.executable}\nprint([1, 2, 3, 4])\n")
    garbage.chmod(0o755)
    said = _probe(str(garbage), "CUSHIP_TARGET_PYTHON", "/nowhere")
    assert said == (
        f"CUSHIP_TARGET_PYTHON ({garbage}) did not answer: its answer: expected object, "
        "got [1, 2, 3, 4]"
    )


class _SquaredLength(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b'{"files": []}'
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
        self.send_header("Content-Length", "\u00b2")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def squared_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SquaredLength)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/simple"
    finally:
        server.shutdown()
        server.server_close()


def test_a_content_length_of_squared_is_no_crash(squared_server: str) -> None:
    env = {**ENV, "CUSHIP_GPUS": "none", "CUSHIP_TORCH": "none"}
    done = subprocess.run(
        [sys.executable, "-m", "cuship", "resolve", "pkg", "--index", squared_server,
         "--retries", "0"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr  # the page has no file: nothing fits, said so
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr


def test_check_refuses_a_fifo_as_its_baseline(tmp_path: Path) -> None:
    fifo = tmp_path / "baseline.json"
    os.mkfifo(fifo)
    done = subprocess.run(
        [sys.executable, "-m", "cuship", "check", str(REPO / "examples" / "cuvecops"), "--quick",
         "--device", "cpu", "--no-store", "--baseline", str(fifo)],
        env=ENV, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"the baseline '{fifo}' is a FIFO (named pipe), not a regular file" in done.stderr


def _shim(tmp_path: Path, mode: str, *args: str) -> subprocess.CompletedProcess[str]:
    fake = tmp_path / "nvcc"
    fake.write_text('#!/bin/sh\necho "ARGS: $*"\n')
    fake.chmod(0o755)
    argv = [sys.executable, "-I", "-S", nvcc_shim.__file__, "run", "--real", str(fake)]
    argv += ["--mode", mode, "--log", str(tmp_path / "calls.jsonl")]
    argv += ["--gencode", "-gencode arch=compute_80,code=sm_80", "--", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def test_the_shim_keeps_an_options_value_and_reads_an_options_file(tmp_path: Path) -> None:
    done = _shim(tmp_path, "rewrite", "-c", "k.cu", "-Xptxas", "-arch=sm_90", "-O2")
    assert done.returncode == 0
    assert done.stdout.strip() == (
        "ARGS: -gencode arch=compute_80,code=sm_80 -c k.cu -Xptxas -arch=sm_90 -O2"
    )
    (tmp_path / "opts").write_text("-gencode arch=compute_90,code=sm_90 -O2\n")
    refused = _shim(tmp_path, "stop", "-c", "k.cu", "--options-file", str(tmp_path / "opts"))
    assert refused.returncode == 2 and "ARGS" not in refused.stdout
    assert "this compile asks for sm_90" in refused.stderr
    rewritten = _shim(tmp_path, "rewrite", "-c", "k.cu", "-optf", str(tmp_path / "opts"))
    assert rewritten.stdout.strip() == "ARGS: -gencode arch=compute_80,code=sm_80 -c k.cu -O2"
    os.mkfifo(tmp_path / "fifo")
    fifo = _shim(tmp_path, "stop", "-c", "k.cu", "--options-file", str(tmp_path / "fifo"))
    assert fifo.returncode == 2 and "is not a regular file" in fifo.stderr
