"""cuship's CUDA timer against the references, on a GPU (exits 3, saying why, without one).

Cases (device-resident torch): torch.add at 4K, 64K, 1M and 16M float32 elements, a 512 MB copy
(2 × 2^26 floats moved) and a bf16 8192³ matmul. Each is timed by

  * cuship cold: its own API (CudaTimer + measure): L2 flushed, one launch between two events,
    every sample kept; the median of the unthrottled samples is shown beside it for reference;
  * cuship hot: the same run's per-call time of N back-to-back calls (CUDA graph, else batch);
  * triton.testing.do_bench (if triton imports): median, L2 flushed per call;
  * a replayed CUDA graph of 100 calls, per call (median of 20 replays);
  * ncu --metrics gpu__time_duration.sum (if ncu is on PATH): the kernels' own duration per
    call, from a child run of this script under ncu (clocks not locked, caches flushed).

The references run first for every case, cuship after (its warm-up profiles each case with
torch.profiler); do_bench on the smallest add runs again at the end, to show whether that
profiling changed later launches. Goals, printed PASS/MISS: hot within 10 % of the graph per call
at every size; cold within 5 % of do_bench for kernels of 50 µs or more; the matmul median (every
sample kept) within 2 % of do_bench. About 2 minutes on an H100.

Usage: python benchmarks/bench_gpu_timer.py [--json PATH] [--no-ncu]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

Call = Callable[[], object]
GRAPH_CALLS, GRAPH_REPLAYS = 100, 20
NCU_BUDGET_S = 150.0


@dataclass(frozen=True)
class Spec:
    name: str
    kind: str  # add, copy, matmul
    n: int
    ncu_calls: int


SPECS = (
    *(Spec(f"add[n={n}]", "add", n, 20) for n in (1 << 12, 1 << 16, 1 << 20, 1 << 24)),
    Spec("copy[512MB]", "copy", 1 << 26, 5),
    Spec("matmul_bf16[8192]", "matmul", 8192, 3),
)


@dataclass
class Row:
    spec: Spec
    seconds: dict[str, float | None] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


def _torch_or_exit() -> Any:
    try:
        import torch
    except ImportError:
        print("bench_gpu_timer: torch is not installed; this benchmark needs a CUDA GPU")
        raise SystemExit(3) from None
    if not torch.cuda.is_available():
        print("bench_gpu_timer: torch sees no CUDA device; this benchmark needs a CUDA GPU")
        raise SystemExit(3)
    return torch


def make_call(torch: Any, spec: Spec) -> Call:
    """The timed call of ``spec`` with its inputs on the device (random, never zeros)."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    if spec.kind == "matmul":
        a, b = (torch.randn(spec.n, spec.n, device="cuda", generator=gen) for _ in range(2))
        a, b = a.bfloat16(), b.bfloat16()
        return lambda: a @ b
    x = torch.randn(spec.n, device="cuda", generator=gen)
    y = torch.randn(spec.n, device="cuda", generator=gen)
    if spec.kind == "copy":
        return lambda: y.copy_(x)
    return lambda: torch.add(y, x, alpha=2.0)


def graph_per_call(torch: Any, call: Call) -> float:
    """Per-call seconds inside a replayed CUDA graph of GRAPH_CALLS calls (median of replays)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            call()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(GRAPH_CALLS):
            call()
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(GRAPH_REPLAYS):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(begin.elapsed_time(end) / 1e3 / GRAPH_CALLS)
    return float(statistics.median(times))


def do_bench(call: Call) -> float | None:
    try:
        import triton.testing
    except ImportError:
        return None
    return float(triton.testing.do_bench(call, warmup=100, rep=500, return_mode="median")) / 1e3


def references(torch: Any, rows: list[Row], calls: dict[str, Call]) -> None:
    for row in rows:
        call = calls[row.spec.name]
        row.seconds["do_bench"] = do_bench(call)
        row.seconds["graph"] = graph_per_call(torch, call)
        print(f"  references {row.spec.name}: done", flush=True)


def _made(call: Call) -> Callable[[], Call]:
    """``call`` as the factory ``Timer.check`` takes (the inputs already exist here)."""
    return lambda: call


def cuship_timing(torch: Any, rows: list[Row], calls: dict[str, Call]) -> None:
    from cuship.bench.timers.cuda import CudaTimer
    from cuship.bench.timers.measure import StopRule, measure

    timer = CudaTimer(torch)
    for row in rows:
        started = time.perf_counter()
        # 0.5 % noise target, at least 10 samples and 0.5 s, at most 10 s
        rule = StopRule(noise=0.005, min_samples=10, min_time=0.5, timeout=10.0)
        m = measure(timer, calls[row.spec.name], rule)
        row.seconds["cold"] = statistics.median(m.samples)
        unthrottled = [s for i, s in enumerate(m.samples) if i not in set(m.throttled)]
        row.seconds["cold_unthrottled"] = statistics.median(unthrottled) if unthrottled else None
        row.seconds["hot"] = m.hot.per_call if m.hot else None
        row.extra.update(
            samples=len(m.samples),
            throttled=len(m.throttled),
            median_clock_mhz=m.median_clock,
            max_clock_mhz=m.max_clock,
            hot_method=m.hot.method if m.hot else None,
            hot_calls=m.hot.calls if m.hot else None,
            notes=list(m.notes) + ([m.hot.note] if m.hot and m.hot.note else []),
            cuship_wall_s=time.perf_counter() - started,
        )
        print(f"  cuship {row.spec.name}: {len(m.samples)} samples", flush=True)
    # as cuship bench does: every point checked for device work after all were timed
    for row in rows:
        row.extra["check_notes"] = list(timer.check(_made(calls[row.spec.name])))


def ncu_child(spec_name: str) -> int:
    """Run under ncu: warm up, then the case's calls inside cudaProfilerStart/Stop."""
    torch = _torch_or_exit()
    spec = next(s for s in SPECS if s.name == spec_name)
    call = make_call(torch, spec)
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for _ in range(spec.ncu_calls):
        call()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    return 0


def ncu_per_call(ncu: str, spec: Spec, timeout: float) -> tuple[float | None, str | None]:
    """Kernel seconds per call from ncu, or None and why."""
    from cuship.bench.ncu.metrics import parse_ncu_csv

    cmd = [ncu, "--metrics", "gpu__time_duration.sum", "--csv", "--profile-from-start", "off"]
    cmd += ["--clock-control", "none", "--cache-control", "all"]
    cmd += [sys.executable, str(Path(__file__).resolve()), "--ncu-child", spec.name]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as err:
        return None, f"ncu: {err}"
    try:
        rows = parse_ncu_csv(proc.stdout)
    except ValueError as err:  # ncu failed (permissions, no kernel): show what it said
        said = " ".join((proc.stdout + proc.stderr).split())[-300:]
        return None, f"ncu (exit {proc.returncode}): {err}; {said}"
    if not rows:
        return None, "ncu profiled no kernel (a copy runs on the copy engine)"
    return sum(r.seconds for r in rows) / spec.ncu_calls, None


def ncu_timing(rows: list[Row]) -> None:
    ncu = shutil.which("ncu")
    deadline = time.perf_counter() + NCU_BUDGET_S
    for row in rows:
        left = deadline - time.perf_counter()
        if ncu is None or left <= 10:
            row.extra["ncu"] = (
                "ncu not on PATH" if ncu is None else "skipped: ncu time budget spent"
            )
            row.seconds["ncu"] = None
            continue
        row.seconds["ncu"], why = ncu_per_call(ncu, row.spec, left)
        row.extra["ncu"] = why
        print(f"  ncu {row.spec.name}: {why or 'done'}", flush=True)


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def ratios(row: Row) -> dict[str, float | None]:
    s = row.seconds
    return {
        "hot_vs_graph": _ratio(s.get("hot"), s.get("graph")),
        "cold_vs_do_bench": _ratio(s.get("cold"), s.get("do_bench")),
        "cold_unthrottled_vs_do_bench": _ratio(s.get("cold_unthrottled"), s.get("do_bench")),
        "cold_vs_ncu": _ratio(s.get("cold"), s.get("ncu")),
        "hot_vs_ncu": _ratio(s.get("hot"), s.get("ncu")),
    }


def _within(ratio: float | None, tolerance: float) -> str:
    if ratio is None:
        return "SKIP"
    return "PASS" if abs(ratio - 1.0) <= tolerance else "MISS"


def _goal(goal: str, case: str, ratio: float | None, tolerance: float) -> dict[str, Any]:
    return {"goal": goal, "case": case, "ratio": ratio, "result": _within(ratio, tolerance)}


def goals(rows: list[Row]) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        r, name = ratios(row), row.spec.name
        out.append(_goal("hot within 10 % of CUDA-graph per call", name, r["hot_vs_graph"], 0.10))
        if (row.seconds.get("do_bench") or 0.0) >= 50e-6:
            goal = "cold within 5 % of do_bench (>= 50 µs)"
            out.append(_goal(goal, name, r["cold_vs_do_bench"], 0.05))
        if row.spec.kind == "matmul":
            goal = "matmul median (every sample kept) within 2 % of do_bench"
            out.append(_goal(goal, name, r["cold_vs_do_bench"], 0.02))
    return out


def _us(value: float | None) -> str:
    return "-" if value is None else f"{value * 1e6:.2f}"


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


HEADER = [
    "case",
    "cold",
    "cold*",
    "hot",
    "method",
    "graph",
    "do_bench",
    "ncu",
    "hot/graph",
    "cold/db",
    "thr%",
    "MHz",
]


def _cells(row: Row) -> tuple[str, ...]:
    s, r, e = row.seconds, ratios(row), row.extra
    share = 100 * e.get("throttled", 0) / max(1, e.get("samples", 1))
    times = (s.get(k) for k in ("cold", "cold_unthrottled", "hot"))
    refs = (s.get(k) for k in ("graph", "do_bench", "ncu"))
    return (
        row.spec.name,
        *map(_us, times),
        str(e.get("hot_method")),
        *map(_us, refs),
        _x(r["hot_vs_graph"]),
        _x(r["cold_vs_do_bench"]),
        f"{share:.0f}",
        f"{e.get('median_clock_mhz') or '-'}",
    )


def print_table(rows: list[Row]) -> None:
    print("\nmedian µs per call (cold*: unthrottled samples only, for reference)")
    widths = [17] + [10] * (len(HEADER) - 1)
    print(" | ".join(f"{h:>{w}}" for h, w in zip(HEADER, widths, strict=True)))
    for row in rows:
        print(" | ".join(f"{c:>{w}}" for c, w in zip(_cells(row), widths, strict=True)))


def probe_effect(torch: Any, calls: dict[str, Call], before: float | None) -> dict[str, Any]:
    """do_bench of the smallest add again, after cuship's torch.profiler checks."""
    after = do_bench(calls[SPECS[0].name])
    ratio = _ratio(after, before)
    return {"case": SPECS[0].name, "before": before, "after": after, "after_over_before": ratio}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--no-ncu", action="store_true", help="skip the ncu reference")
    parser.add_argument("--ncu-child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.ncu_child:
        return ncu_child(args.ncu_child)
    torch = _torch_or_exit()
    started = time.perf_counter()
    rows = [Row(spec) for spec in SPECS]
    calls = {spec.name: make_call(torch, spec) for spec in SPECS}
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}", flush=True)
    references(torch, rows, calls)
    cuship_timing(torch, rows, calls)
    effect = probe_effect(torch, calls, rows[0].seconds.get("do_bench"))
    if not args.no_ncu:
        ncu_timing(rows)
    print_table(rows)
    results = goals(rows)
    for g in results:
        print(f"{g['result']:>4}  {g['goal']}: {g['case']} ratio {_x(g['ratio'])}")
    change = _x(effect["after_over_before"])
    print(f"do_bench {effect['case']} after/before cuship's profiler checks: {change}")
    print(f"{time.perf_counter() - started:.0f} s in all")
    if args.json:
        doc = {
            "device": torch.cuda.get_device_name(0),
            "torch": torch.__version__,
            "cases": [
                {"case": r.spec.name, "seconds": r.seconds, "ratios": ratios(r), **r.extra}
                for r in rows
            ],
            "goals": results,
            "profiler_effect": effect,
        }
        args.json.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
