"""`cuship bench` as users run it: real processes, the store, exports, gates and exit codes."""

from __future__ import annotations

import csv
import json
import re
import textwrap
from functools import partial
from pathlib import Path

from tests.integration import clirun
from tests.jsondocs import BENCH, schema_errors

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cuvecops"
QUICK = (
    "--timer",
    "wall",
    "--min-time",
    "0.1",
    "--timeout",
    "2",
)  # CPU code: wall clock, GPU or not


cuship = partial(
    clirun.cuship, drop=("GITHUB_ACTIONS", "CUSHIP_STORE", "CUVECOPS_PLANT_SLOWDOWN"), columns=200
)


def test_example_runs_stores_and_exports_csv(tmp_path: Path) -> None:
    store = tmp_path / "r.db"
    out = tmp_path / "results"
    env = {"CUSHIP_STORE": str(store)}
    proc = cuship("bench", str(EXAMPLE), *QUICK, "--export", "csv", "-o", str(out), env=env)
    assert proc.returncode == 0, proc.stderr  # no gate asked for: 0 whatever the timings
    assert "saxpy" in proc.stdout and "GB/s" in proc.stdout
    # The example's CPU floors and noise target are met on an idle machine; a loaded one may
    # leave a point unsure (its interval wide at the timeout) or miss a floor, which the run
    # says and keeps: the verdict is held to the points' own counts, never to the machine's load
    summary = re.search(
        r"(\d+) points: (\d+) ok, (\d+) unsure, (\d+) errored(.*); verdict (\S+), run 1$",
        proc.stderr,
        re.M,
    )
    assert summary is not None, proc.stderr
    points, ok, unsure, errored = map(int, summary.groups()[:4])
    assert points == ok + unsure and points >= 4 and errored == 0
    missed = re.search(r"; (\d+) floors missed", summary[5])
    assert summary[6] == ("floor-missed" if missed else "ok"), summary[0]
    (csv_file,) = out.glob("benchmark_cpu_*.csv")
    rows = list(csv.DictReader(csv_file.read_text().splitlines()))
    assert {r["key"] for r in rows} >= {"saxpy[n=262144]", "reduce_sum[dtype=int64,n=262144]"}
    assert all(float(r["value"]) > 0 and r["unit"] == "s" for r in rows)
    doc = json.loads(csv_file.with_suffix(".json").read_text())
    assert doc["format"] == "cuship-bench/1" and doc["run"]["id"] == 1
    report = cuship("report", str(EXAMPLE), "--kind", "bench", "--format", "json", env=env)
    assert report.returncode == 0 and '"bench"' in report.stdout


def test_planted_slowdown_fails_the_gate_with_slower(tmp_path: Path) -> None:
    env = {"CUSHIP_STORE": str(tmp_path / "r.db")}
    point = "saxpy[n=262144]"  # one point of the case, by its key
    base = cuship("bench", str(EXAMPLE), "--case", point, *QUICK, env=env)
    assert base.returncode == 0, base.stderr
    planted = {**env, "CUVECOPS_PLANT_SLOWDOWN": "1"}
    args = ("--case", point, *QUICK, "--baseline", "latest", "--fail-on-regression", "--json")
    proc = cuship("bench", str(EXAMPLE), *args, env=planted)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert schema_errors(BENCH, doc) == []
    (result,) = doc["results"]
    assert result["comparison"]["verdict"] == "SLOWER" and doc["run"]["verdict"] == "regressed"


def test_cross_machine_baseline_is_refused_unless_allowed(tmp_path: Path) -> None:
    out = tmp_path / "results"
    env = {"CUSHIP_STORE": str(tmp_path / "r.db")}
    first = cuship("bench", str(EXAMPLE), "--case", "softmax", *QUICK, "--export", "json",
                   "-o", str(out), "--no-store", env=env)  # fmt: skip
    assert first.returncode == 0, first.stderr
    (exported,) = out.glob("*.json")
    other = {**env, "CUSHIP_GPUS": "none", "CUSHIP_NVCC": "none"}  # another CUDA: another machine
    args = ("bench", str(EXAMPLE), "--case", "softmax", *QUICK, "--baseline", str(exported))
    refused = cuship(*args, env=other)
    assert refused.returncode == 2 and "--allow-cross-machine" in refused.stderr
    allowed = cuship(*args, "--allow-cross-machine", env=other)
    assert allowed.returncode == 0, allowed.stderr


_CASES = """
    import numpy as np
    from cuship.bench import case

    LEAK = []

    @case(params={"n": [1000]}, setup=lambda rng, n: {"x": rng.standard_normal(n)})
    def fine(x):
        return x.sum()

    @case
    def broken():
        raise ValueError("planted failure")

    @case
    def leaky():
        LEAK.append(bytearray(64 * 1024))

    @case
    def clean():
        return bytearray(64 * 1024)
"""


def _module(tmp_path: Path) -> Path:
    path = tmp_path / "bench_cases.py"
    path.write_text(textwrap.dedent(_CASES))
    return path


def test_a_raising_case_is_errored_others_recorded_exit_1(tmp_path: Path) -> None:
    module = _module(tmp_path)
    env = {"CUSHIP_STORE": str(tmp_path / "r.db")}
    proc = cuship("bench", str(module), "--case", "fine", "--case", "broken", *QUICK, "--json",
                  env=env)  # fmt: skip
    assert proc.returncode == 1
    assert "broken errored: ValueError: planted failure" in proc.stderr
    statuses = {r["key"]: r["status"] for r in json.loads(proc.stdout)["results"]}
    assert statuses["broken"] == "errored" and set(statuses) == {"fine[n=1000]", "broken"}
    # recorded with its own verdict: "unsure" when a loaded machine leaves its interval wide
    assert statuses["fine[n=1000]"] in ("ok", "unsure")


def test_burn_in_fails_on_a_leak_and_passes_a_clean_case(tmp_path: Path) -> None:
    module = _module(tmp_path)
    leak = cuship("bench", str(module), "--burn-in", "3s", "--case", "leaky", "--no-store")
    assert leak.returncode == 1 and "host RSS: GROWING" in leak.stdout, leak.stdout + leak.stderr
    clean = cuship("bench", str(module), "--burn-in", "3s", "--case", "clean", "--no-store")
    assert clean.returncode == 0 and "host RSS: flat" in clean.stdout, clean.stdout + clean.stderr


def test_fixed_protocol_and_interleaved_ab(tmp_path: Path) -> None:
    module = _module(tmp_path)
    fixed = cuship("bench", str(module), "--case", "fine", "--seeds", "3", "--repeats", "4",
                   "--timer", "wall", "--no-store", "--json")  # fmt: skip
    assert fixed.returncode == 0, fixed.stderr
    doc = json.loads(fixed.stdout)
    assert doc["run"]["meta"]["seeds"] == 3 and doc["run"]["meta"]["repeats"] == 4
    assert len(doc["results"][0]["payload"]["samples"]) == 12
    ab = cuship("bench", str(module), "--case", "fine", *QUICK, "--compare-with", str(module),
                "--interleave", "--no-store", "--json")  # fmt: skip
    assert ab.returncode == 0, ab.stderr
    (result,) = json.loads(ab.stdout)["results"]
    assert result["comparison"]["verdict"] in ("SAME", "UNSURE")


def test_instruction_counts_or_a_clear_missing_valgrind(tmp_path: Path) -> None:
    module = _module(tmp_path)
    proc = cuship("bench", str(module), "--case", "fine", "--timer", "instructions", "--json",
                  "--no-store")  # fmt: skip
    if proc.returncode == 3:  # CI without valgrind: the promise is exit 3 with the fix
        assert "apt-get install valgrind" in proc.stderr
        return
    assert proc.returncode == 0, proc.stderr
    (result,) = json.loads(proc.stdout)["results"]
    assert result["payload"]["unit"] == "instructions" and result["numbers"]["median"] > 100
    none = cuship("bench", str(module), "--case", "fine", "--timer", "instructions",
                  env={"PATH": "/nonexistent"})  # fmt: skip
    assert none.returncode == 3 and "apt-get install valgrind" in none.stderr


def test_history_subcommand_is_routed_and_path_is_the_default() -> None:
    proc = cuship("bench", "--help")
    assert proc.returncode == 0 and "history" in proc.stdout and "run" in proc.stdout
    missing = cuship("bench", "no/such/dir", "--no-store")
    assert missing.returncode == 2 and "no such file or directory" in missing.stderr
