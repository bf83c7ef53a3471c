"""cuship's nvcc for real: the shadow toolkit it makes runs the toolkit's nvcc (here a stand-in
that prints its arguments) with the configured arch flags, or refuses, and logs each call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cuship.builder.run import nvcc_shim

SM90 = ("-gencode=arch=compute_90,code=sm_90",)


def test_the_shadow_toolkit_runs_the_real_nvcc_with_the_configured_flags(tmp_path: Path) -> None:
    """A stand-in nvcc that prints its arguments: the shim hands it the rewritten line, logs
    the call, and the other toolkit entries are the real ones."""
    real = tmp_path / "cuda"
    (real / "bin").mkdir(parents=True)
    (real / "include").mkdir()
    (real / "bin" / "ptxas").write_text("")
    fake = real / "bin" / "nvcc"
    fake.write_text('#!/bin/sh\necho "ARGS: $*"\n')
    fake.chmod(0o755)
    log = tmp_path / "calls.jsonl"
    argv = [sys.executable, "-I", nvcc_shim.__file__, "make", "--cuda-home", str(real)]
    argv += ["--into", str(tmp_path / "home"), "--mode", "rewrite", "--log", str(log)]
    subprocess.run([*argv, "--gencode", " ".join(SM90)], check=True, capture_output=True)
    home = tmp_path / "home"
    assert (home / "include").resolve() == (real / "include").resolve()
    assert (home / "bin" / "ptxas").resolve() == (real / "bin" / "ptxas").resolve()
    nvcc = home / "bin" / "nvcc"
    env = {**os.environ, "PYTHONPATH": "/nonexistent"}  # the shim runs isolated (-I -S)
    said = subprocess.run(
        [str(nvcc), "-gencode", "arch=compute_75,code=sm_75", "-c", "k.cu"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    assert said.strip() == "ARGS: -gencode=arch=compute_90,code=sm_90 -c k.cu"
    refused = tmp_path / "stop"
    subprocess.run(
        [
            *argv[:-4],
            "--into",
            str(refused),
            "--mode",
            "stop",
            "--log",
            str(log),
            "--gencode",
            SM90[0],
        ],
        check=True,
        capture_output=True,
    )
    done = subprocess.run(
        [str(refused / "bin" / "nvcc"), "-arch=sm_75", "k.cu"], capture_output=True, text=True
    )
    assert done.returncode == 2 and "asks for sm_75, compute_75 (-arch=sm_75)" in done.stderr
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [line["action"] for line in lines] == ["rewrote", "refused"]
