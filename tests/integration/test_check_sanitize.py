"""`cuship check --sanitize`: its exits without a GPU or without compute-sanitizer, the whole
pipeline (worker under a prefix, log FIFO, markers, mapping, worker replacement, reports) with a
stand-in compute-sanitizer on the CPU, and the planted bugs under the real tools on a GPU."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from cuship.check.sanitize.tools import search_dirs
from tests.integration import clirun

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "cuvecops"
PLANTED = REPO / "tests" / "fixtures" / "planted_sanitize"
FAKE_SMI = REPO / "tests" / "fixtures" / "nvidia-smi"
_DROP = ("GITHUB_ACTIONS", "CUSHIP_GPUS", "CUSHIP_COMPUTE_SANITIZER", "CUDA_HOME", "CUDA_PATH")
cuship = partial(clirun.cuship, drop=_DROP)


def test_no_gpu_exits_3_before_anything_runs(tmp_path: Path) -> None:
    done = cuship(
        "check", EXAMPLE, "--sanitize", "memcheck", env={"CUSHIP_GPUS": "none"}, cwd=tmp_path
    )
    assert done.returncode == 3, done.stderr
    assert "--device cuda, but this machine has no CUDA GPU" in done.stderr
    assert "hint:" in done.stderr


def test_sanitize_on_the_cpu_is_a_usage_error(tmp_path: Path) -> None:
    done = cuship("check", EXAMPLE, "--device", "cpu", "--sanitize", "memcheck", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "--sanitize runs compute-sanitizer on a GPU; this run is --device cpu" in done.stderr
    bad = cuship("check", EXAMPLE, "--sanitize", "memcheck,valgrind", cwd=tmp_path)
    assert bad.returncode == 2 and "no tool named 'valgrind'" in bad.stderr


def test_a_gpu_without_compute_sanitizer_exits_3_naming_it_and_the_fix(tmp_path: Path) -> None:
    faked = {"CUSHIP_GPUS": "H100", "CUSHIP_COMPUTE_SANITIZER": "none"}
    done = cuship("check", EXAMPLE, "--sanitize", "all", env=faked, cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert "--sanitize needs compute-sanitizer" in done.stderr
    assert "install the CUDA toolkit (compute-sanitizer ships with it)" in done.stderr


@pytest.mark.skipif(
    Path("/usr/local/cuda/bin/compute-sanitizer").exists(),
    reason="this machine has /usr/local/cuda/bin/compute-sanitizer, where the search ends",
)
def test_the_search_names_where_it_looked(tmp_path: Path) -> None:
    """A GPU as nvidia-smi shows it (the fake of tests/fixtures), no compute-sanitizer on PATH,
    CUDA_HOME an empty toolkit."""
    bin_dir, home = tmp_path / "bin", tmp_path / "cuda"
    bin_dir.mkdir()
    (home / "bin").mkdir(parents=True)
    shutil.copy(FAKE_SMI, bin_dir / "nvidia-smi")
    env = {"PATH": f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin", "CUDA_HOME": str(home)}
    done = cuship("check", EXAMPLE, "--sanitize", "memcheck", env=env, cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert "which is not in $CUDA_HOME/bin, on PATH or in /usr/local/cuda/bin" in done.stderr
    assert f"{home}/bin" in done.stderr and str(bin_dir) in done.stderr


def test_the_cost_benchmark_says_why_it_cannot_run(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in _DROP}
    for extra, reason in (
        ({"CUSHIP_GPUS": "none"}, "no CUDA GPU on this machine"),
        ({"CUSHIP_GPUS": "H100", "CUSHIP_COMPUTE_SANITIZER": "none"}, "needs compute-sanitizer"),
    ):
        done = subprocess.run(
            [sys.executable, REPO / "benchmarks" / "bench_sanitize.py"],
            env={**env, **extra}, capture_output=True, text=True, cwd=tmp_path, check=False,
        )  # fmt: skip
        assert done.returncode == 3, done.stderr
        assert done.stdout.startswith("bench_sanitize: ") and reason in done.stdout
        assert len(done.stdout.splitlines()) == 1


# --- the pipeline on the CPU, with a stand-in for compute-sanitizer --------------------------
# It runs the program with the log's path in FAKE_SANITIZER_LOG; the "kernels" below (engine
# cuda: any Python callable) write records into it, as the tool would while they run.

_FAKE_SANITIZER = """\
#!{python}
import json, os, subprocess, sys
args, opts = sys.argv[1:], {{}}
while args and args[0].startswith("--"):
    opts[args[0]], args = args[1], args[2:]
with open(os.environ["FAKE_SANITIZER_ARGV"], "a") as seen:
    caching = os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING")
    seen.write(json.dumps({{"argv": sys.argv[1:], "no_caching": caching}}) + "\\n")
barrier = os.environ.get("FAKE_SANITIZER_BARRIER")
if barrier:  # wait for the other tools' stand-ins: passes only when the tools run side by side
    import pathlib, time
    here = pathlib.Path(barrier)
    (here / opts["--tool"]).touch()
    deadline = time.monotonic() + 60
    while len(list(here.iterdir())) < int(os.environ["FAKE_SANITIZER_PEERS"]):
        if time.monotonic() > deadline:
            sys.exit("stand-in: the other tools never started (they ran one after another)")
        time.sleep(0.05)
fd = os.open(opts["--log-file"], os.O_WRONLY)
os.write(fd, b"========= COMPUTE-SANITIZER\\n")
env = dict(os.environ, FAKE_SANITIZER_LOG=opts["--log-file"], FAKE_SANITIZER_TOOL=opts["--tool"])
code = subprocess.call(args, env=env)
os.write(fd, b"========= ERROR SUMMARY: 0 errors\\n")
sys.exit(code)
"""

_CHECKS = """
import atexit, os
import numpy as np
from cuship.check import Impl, Op, Tensor

BROKEN = []

def say(tool, *records):
    path = os.environ.get("FAKE_SANITIZER_LOG")
    if not path or os.environ.get("FAKE_SANITIZER_TOOL") != tool:
        return False
    text = ""
    for first, *rest in records:
        text += "========= " + first + "\\n" + "".join("=========     " + r + "\\n" for r in rest)
        text += "========= \\n"
    fd = os.open(path, os.O_WRONLY)
    os.write(fd, text.encode())
    os.close(fd)
    return True

def hit(call):
    return ('Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" '
            f"on CUDA API call to {call}.", "Saved host backtrace up to driver entry point at error")

def oob(x, out):
    if BROKEN:  # a worker that was not replaced: every call fails, as after a real OOB
        say("memcheck", hit("cudaMemcpy"))
        raise RuntimeError("CUDA error: unspecified launch failure")
    out[...] = 2 * x
    if x.size == 1000 and say("memcheck", ("Invalid __global__ write of size 4 bytes",
            "at oob_write(float *, int)+0xc0 in planted_kernels.py:18",
            "by thread (232,0,0) in block (3,0,0)"), hit("cudaDeviceSynchronize")):
        BROKEN.append(True)
        atexit.register(say, "memcheck", hit("cudaFree"))
        raise RuntimeError("CUDA error: unspecified launch failure")

def race(x, out):
    out[...] = 2 * x
    say("racecheck", ("Error: Race reported between Write access at shared_race(float *, float *, "
        "float *, int)+0x160 in planted_kernels.py:28", "and Read access at shared_race(float *, "
        "float *, float *, int)+0x1e0 in planted_kernels.py:31 [1024 hazards]"))

def clean(x, out):
    if BROKEN:
        say("memcheck", hit("cudaMemcpy"))
        raise RuntimeError("CUDA error: unspecified launch failure")
    out[...] = 2 * x
    if os.environ.get("FAKE_CRASH") and say("memcheck", ("Invalid __global__ read of size 4 bytes",
            "at clean(float *)+0x40 in planted_kernels.py:50")):
        os.kill(os.getpid(), 11)
    if os.environ.get("FAKE_LEAK"):
        atexit.register(say, "memcheck", ("Leaked 4000 bytes at 0x7f0000000000",))

def op(name, fn):
    return Op(name=name, reference=lambda x: 2 * x, impls=(Impl(kind="cuda", fn=fn),),
              inputs=(Tensor(name="x", dims=("n",)),), outputs=(Tensor(name="out", dims=("n",)),),
              shapes=({"n": 1000}, {"n": 37}), distributions=("normal",))

OPS = [op("oob", oob), op("race", race), op("clean", clean)]
"""


def _fake_project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "cuship.toml").write_text(
        '[check]\nmodules = ["checks.py"]\nfuzz = 0\n[check.quick]\nfuzz = 0\n'
    )
    (root / "checks.py").write_text(textwrap.dedent(_CHECKS))
    tool = tmp_path / "bin" / "compute-sanitizer"
    tool.parent.mkdir()
    tool.write_text(_FAKE_SANITIZER.format(python=sys.executable))
    tool.chmod(0o755)
    env = {
        "CUSHIP_GPUS": "H100",
        "CUSHIP_STORE": str(tmp_path / "r.db"),
        "PATH": f"{tool.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "FAKE_SANITIZER_ARGV": str(tmp_path / "argv.jsonl"),
    }
    return root, env


def _by_tool(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {run["tool"]: run for run in doc["sanitize"]}


def _bad(run: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    return {
        (c["op"], c["case"]["index"]): c for c in run["cases"] if c["status"] in ("failed", "error")
    }


def test_findings_map_to_their_cases_and_a_broken_worker_is_replaced(tmp_path: Path) -> None:
    root, env = _fake_project(tmp_path)
    out = tmp_path / "r.json"
    done = cuship(
        "check", root, "--sanitize", "memcheck,racecheck", "--format", "json", "-o", out, env=env
    )
    assert done.returncode == 1, done.stderr
    doc = json.loads(out.read_text())
    assert {g["status"] for g in doc["groups"]} == {"passed"}  # the plain run is clean
    runs = _by_tool(doc)
    memcheck, racecheck = runs["memcheck"], runs["racecheck"]
    assert len(memcheck["cases"]) == len(racecheck["cases"]) == 6
    (oob,) = _bad(memcheck).values()  # only the n=1000 case; nothing after it broke
    assert (oob["op"], oob["status"], oob["case"]["sizes"]) == ("oob", "failed", {"n": 1000})
    assert oob["kinds"][0] == "Invalid __global__ write of size 4 bytes"
    assert oob["kernels"] == ["oob_write"] and oob["findings"] == 3  # + 719 at exit, merged
    assert any("cudaFree" in line for line in oob["lines"])
    assert "unspecified launch failure" in oob["message"]
    assert memcheck["workers"] == 2 and memcheck["unattributed"] == []
    assert set(_bad(racecheck)) == {("race", 0), ("race", 1)}
    # a worker is replaced after every case with findings, whatever the tool (the print limit
    # is then per case too): the two race cases, then the clean one on a third worker
    assert racecheck["workers"] == 3 and racecheck["unattributed"] == []
    for run in (memcheck, racecheck):
        assert run["plain_s"] > 0 and run["cases_s"] > 0 and run["slowdown"] is not None
    seen = [json.loads(line) for line in (tmp_path / "argv.jsonl").read_text().splitlines()]
    assert {s["no_caching"] for s in seen} == {"1"}  # torch's allocator off: exact bounds
    argv = [s["argv"] for s in seen]  # the two tools' workers, in whatever order they started
    assert sorted(a[:5] for a in argv) == [
        ["--tool", tool, "--print-limit", "200", "--log-file"]
        for tool in ("memcheck",) * 2 + ("racecheck",) * 3
    ]
    # this interpreter imports cuship's worker, then takes cuship's directory off sys.path
    assert argv[0][6:8] == [sys.executable, "-c"] and len(argv[0]) == 9
    assert "from cuship.check.run import _worker" in argv[0][8]
    assert "sanitize memcheck: oob/cuda/float32 case 0 (n=1000 normal" in done.stderr
    assert " cuship check " in done.stderr and "--sanitize memcheck" in done.stderr
    assert "sanitize memcheck: 6 cases, 1 bad, 0 unattributed;" in done.stderr


def test_the_tools_run_side_by_side(tmp_path: Path) -> None:
    """Each tool's stand-in waits until the other's has started: run one after another, the
    first would wait in vain and its cases would not be checked."""
    root, env = _fake_project(tmp_path)
    (tmp_path / "barrier").mkdir()
    env |= {"FAKE_SANITIZER_BARRIER": str(tmp_path / "barrier"), "FAKE_SANITIZER_PEERS": "2"}
    out = tmp_path / "r.json"
    args = ("--sanitize", "memcheck,racecheck", "--parallel", "2", "--format", "json", "-o", out)
    done = cuship("check", root, *args, env=env)
    assert done.returncode == 1, done.stderr
    runs = _by_tool(json.loads(out.read_text()))
    assert [run["tool"] for run in runs.values()] == ["memcheck", "racecheck"]  # order asked
    assert {k: {c["status"] for c in _bad(run).values()} for k, run in runs.items()} == {
        "memcheck": {"failed"},
        "racecheck": {"failed"},
    }
    assert sorted(p.name for p in (tmp_path / "barrier").iterdir()) == ["memcheck", "racecheck"]


def test_the_report_formats_and_a_finding_in_no_case(tmp_path: Path) -> None:
    root, env = _fake_project(tmp_path)
    junit = tmp_path / "r.xml"
    args = ("check", root, "--sanitize", "memcheck", "--op", "clean")
    clean = cuship(*args, "--format", "junit", "-o", junit, env=env)
    assert clean.returncode == 0, clean.stderr
    suites = {s.get("name"): s for s in ET.parse(junit).getroot().findall("testsuite")}
    suite = suites["cuship check sanitize memcheck"]
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("1", "0", "0")
    assert "sanitize: memcheck clean" in clean.stderr
    leak = cuship(*args, env={**env, "FAKE_LEAK": "1"})
    assert leak.returncode == 1, leak.stderr
    assert "Leaked 4000 bytes" in leak.stdout and "at the exit of worker w1" in leak.stdout
    assert "sanitize: memcheck 1 bad" in leak.stderr


def test_what_the_tool_said_before_a_case_crashed_its_worker_belongs_to_that_case(
    tmp_path: Path,
) -> None:
    root, env = _fake_project(tmp_path)
    out = tmp_path / "r.json"
    done = cuship(
        "check", root, "--sanitize", "memcheck", "--op", "clean", "--format", "json", "-o", out,
        env={**env, "FAKE_CRASH": "1"},
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    (run,) = json.loads(out.read_text())["sanitize"]
    assert [c["status"] for c in run["cases"]] == ["failed", "failed"]
    for case in run["cases"]:
        assert case["kinds"] == ["Invalid __global__ read of size 4 bytes"]
        assert case["message"].startswith("worker process exited with status 245")  # the tool's
    assert run["unattributed"] == [] and run["workers"] == 2


def test_a_sanitizer_that_cannot_start_the_program_fails_every_case_once(tmp_path: Path) -> None:
    """As when the tool cannot attach (a driver it does not support): it says so in its log and
    exits without running the worker; the pass stops trying, and says why for each case."""
    root, env = _fake_project(tmp_path)
    tool = tmp_path / "bin" / "compute-sanitizer"
    tool.write_text(
        f"#!{sys.executable}\nimport os, sys\n"
        "fd = os.open(sys.argv[sys.argv.index('--log-file') + 1], os.O_WRONLY)\n"
        "os.write(fd, b'========= Error: No attachable process found.\\n')\nsys.exit(255)\n"
    )
    out = tmp_path / "r.json"
    done = cuship("check", root, "--sanitize", "memcheck", "--format", "json", "-o", out, env=env)
    assert done.returncode == 1, done.stderr
    (run,) = json.loads(out.read_text())["sanitize"]
    assert {c["status"] for c in run["cases"]} == {"error"} and run["workers"] == 1
    message = run["cases"][-1]["message"]
    assert message.startswith("not run: the sanitized worker could not start: worker process")
    assert "exited with status 255" in message
    (stray,) = run["unattributed"]
    assert stray["where"] == "at the exit of worker w1"
    assert stray["kinds"] == ["Error: No attachable process found."]


# --- the planted bugs under the real tools (a GPU with compute-sanitizer only) -------------


@functools.cache
def _real_gpu_and_sanitizer() -> str | None:
    """Why the GPU test cannot run here, or None."""
    from cuship.machine import fingerprint

    environ = {k: v for k, v in os.environ.items() if k not in _DROP[1:3]}
    if not fingerprint(environ).gpus:
        return "needs a CUDA GPU"
    if not any(shutil.which("compute-sanitizer", path=d) for d in search_dirs(environ)):
        return "needs compute-sanitizer (the CUDA toolkit)"
    return _numba_runs_here()


_PROBE = """
import numpy as np
from numba import cuda

@cuda.jit
def double(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] *= 2

x = cuda.to_device(np.ones(4, np.float32))
double[1, 32](x)
assert x.copy_to_host().tolist() == [2.0] * 4
"""


def _numba_runs_here() -> str | None:
    """Why numba-cuda cannot run a kernel here (a release that breaks on the installed NumPy:
    numba 0.68 on NumPy 2.5 stops at ``np.row_stack``), or None. Its deprecation warnings are
    not failures: the probe runs outside pytest's warning filters."""
    probe = [sys.executable, "-W", "ignore", "-c", _PROBE]
    done = subprocess.run(probe, capture_output=True, text=True, timeout=300, check=False)
    if done.returncode == 0:
        return None
    last = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return f"needs numba-cuda that runs a kernel with this NumPy: {last}"


@pytest.mark.skipif(_real_gpu_and_sanitizer() is not None, reason=str(_real_gpu_and_sanitizer()))
def test_each_planted_bug_is_caught_by_its_tool_on_a_gpu(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    done = cuship(
        "check", PLANTED, "--device", "cuda", "--sanitize", "memcheck,racecheck,initcheck",
        "--format", "json", "-o", out, env={"CUSHIP_STORE": str(tmp_path / "r.db")}, timeout=1800,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    doc = json.loads(out.read_text())
    assert {g["status"] for g in doc["groups"]} == {"passed"}, doc["groups"]
    runs = _by_tool(doc)
    for tool, op, kind, kernel in (
        ("memcheck", "oob", "Invalid __global__ write", "oob_write"),
        ("racecheck", "race", "Race reported between", "shared_race"),
        ("initcheck", "uninit", "Uninitialized __global__ memory read", "uninit_read"),
    ):
        bad = _bad(runs[tool])
        assert {case_op for case_op, _ in bad} >= {op}, (tool, bad)
        assert any(kind in k for c in bad.values() if c["op"] == op for k in c["kinds"]), bad
        named = {k for c in bad.values() if c["op"] == op for k in c["kernels"]}
        assert named == {f"planted_kernels::{kernel}"}, (tool, named)
        assert not [c for (case_op, _), c in bad.items() if case_op == "clean"], (tool, bad)
        assert runs[tool]["unattributed"] == [], runs[tool]["unattributed"]
