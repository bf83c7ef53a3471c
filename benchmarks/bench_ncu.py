"""``cuship bench --profile ncu`` on a GPU: what profiling costs per case, and whether ncu's DRAM
figures agree with cuship's own bandwidth figure (exits 3 with a one-line reason without a GPU,
a CUDA build of torch or ncu).

On the example's cases (examples/cuvecops, with its CUDA extension installed):

  * overhead: ``cuship bench PATH --timer cuda --json --no-store`` run twice, without and with
    ``--profile ncu``; the difference in wall time per case, and each case's own ncu run
    (``ncu.wall_time``: ncu starting Python, importing the module, the warm-up and replays);
  * agreement, per case: cuship's GB/s (its ``bytes`` work model over the cold median) over
    ncu's DRAM GB/s (``dram__bytes.sum.per_second``), and cuship's share of the datasheet
    bandwidth over ncu's DRAM % of peak; goal: within 10 % where the kernels run 20 µs or more
    (below that, launch latency is a large part of the cold median and the ratio says so);
  * the timed medians of both runs side by side: profiling comes after the timing, so they
    should differ by no more than run-to-run noise;
  * where the two bandwidths differ, why, in two factors whose product is their ratio: the
    kernels' share of the call cuship timed (ncu's kernel time over cuship's median: the rest
    is launch gaps, host work and copies the call waits for, which a user's code pays too)
    and cuship's bytes over ncu's DRAM bytes (its ``bytes`` model against the traffic ncu
    counted; goal: within 10 %).

Usage: python benchmarks/bench_ncu.py [PATH] [--case NAME]... [--set basic|full] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

AGREEMENT = 0.10
LONG_ENOUGH = 20e-6  # seconds of kernel time per call for the agreement goal


def _missing() -> str | None:
    """Why this benchmark cannot run here, in one line; None when it can."""
    from cuship.machine import fingerprint
    from cuship.tools import find_tool

    if not fingerprint(toolkit=False).gpus:
        return "no NVIDIA GPU here; this benchmark profiles CUDA kernels"
    try:
        import torch
    except ImportError:
        return "torch is not installed; the CUDA timer needs a CUDA build of torch"
    if not torch.cuda.is_available():
        return "torch sees no CUDA device; the CUDA timer needs one"
    found = find_tool("ncu", os.environ)
    if found.path is None:
        return f"Nsight Compute's ncu is not in {found.where()}"
    return None


def run_bench(path: Path, extra: list[str]) -> tuple[float, int, dict[str, Any] | None, str]:
    """(wall seconds, exit code, the JSON report or None, the last line of stderr)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    argv = [sys.executable, "-m", "cuship", "bench", str(path), "--timer", "cuda", "--json"]
    argv += ["--no-store", *extra]
    started = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - started
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError:
        doc = None
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    return wall, proc.returncode, doc, lines[-1] if lines else ""


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _verdict(ratio: float | None, kernel_time: float | None) -> str:
    if ratio is None or kernel_time is None:
        return "SKIP"
    if kernel_time < LONG_ENOUGH:
        return "short"
    return "PASS" if abs(ratio - 1.0) <= AGREEMENT else "MISS"


def explain(row: dict[str, Any]) -> dict[str, Any]:
    """The two factors of ``bw_ratio``: the kernels' share of the timed call, and cuship's
    bytes over ncu's DRAM bytes (their product is the ratio); with the bytes' verdict."""
    share = _ratio(row["kernel_time"], row["median_profiled"])
    bytes_ratio = _ratio(row["bw_ratio"], share)
    gap = None
    if row["kernel_time"] is not None and row["median_profiled"] is not None:
        gap = row["median_profiled"] - row["kernel_time"]
    return {
        "kernel_share": share,
        "outside_kernels_s": gap,
        "bytes_ratio": bytes_ratio,
        "bytes_result": _verdict(bytes_ratio, row["kernel_time"]),
    }


def rows(plain: dict[str, Any], profiled: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per case: timings of both runs, ncu's figures, the agreement."""
    before = {r["key"]: r.get("numbers", {}) for r in plain["results"]}
    out = []
    for result in profiled["results"]:
        numbers, ncu = result.get("numbers", {}), result.get("ncu") or {}
        kernel = numbers.get("ncu_kernel_time")
        out.append(
            {
                "key": result["key"],
                "median_plain": before.get(result["key"], {}).get("median"),
                "median_profiled": numbers.get("median"),
                "ncu_wall": ncu.get("wall_time"),
                "ncu_error": ncu.get("error"),
                "kernel_time": kernel,
                "kernels": ncu.get("kernels"),
                "cuship_gbps": numbers.get("gbps"),
                "ncu_dram_gbps": numbers.get("ncu_dram_gbps"),
                "bw_ratio": numbers.get("ncu_bw_ratio"),
                "cuship_peak": numbers.get("peak_bandwidth_fraction"),
                "ncu_dram_peak": numbers.get("ncu_dram_peak_fraction"),
                "peak_ratio": numbers.get("ncu_peak_ratio"),
                "occupancy": numbers.get("ncu_occupancy_fraction"),
                "sm": numbers.get("ncu_sm_fraction"),
                "bw_result": _verdict(numbers.get("ncu_bw_ratio"), kernel),
                "peak_result": _verdict(numbers.get("ncu_peak_ratio"), kernel),
            }
        )
        out[-1].update(explain(out[-1]))
    return out


def _f(value: float | None, scale: float = 1.0, spec: str = ".4g") -> str:
    return "-" if value is None else format(value * scale, spec)


def print_table(found: list[dict[str, Any]]) -> None:
    header = ("case", "µs plain", "µs prof", "ncu s", "kern µs", "GB/s", "ncu GB/s", "ratio",
              "peak%", "ncu%", "ratio", "BW", "%peak", "kern share", "bytes", "bytes")  # fmt: skip
    print(" | ".join(f"{h:>10}" for h in header))
    for r in found:
        cells = (
            r["key"][:34],
            _f(r["median_plain"], 1e6), _f(r["median_profiled"], 1e6), _f(r["ncu_wall"], 1, ".3g"),
            _f(r["kernel_time"], 1e6), _f(r["cuship_gbps"]), _f(r["ncu_dram_gbps"]),
            _f(r["bw_ratio"], 1, ".3f"), _f(r["cuship_peak"], 100, ".1f"),
            _f(r["ncu_dram_peak"], 100, ".1f"), _f(r["peak_ratio"], 1, ".3f"),
            r["bw_result"], r["peak_result"], _f(r["kernel_share"], 1, ".3f"),
            _f(r["bytes_ratio"], 1, ".3f"), r["bytes_result"],
        )  # fmt: skip
        print(" | ".join(f"{c:>10}" for c in cells))
        if r["ncu_error"]:
            print(f"    not profiled: {r['ncu_error']}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("path", nargs="?", type=Path, default=REPO / "examples" / "cuvecops")
    parser.add_argument("--case", action="append", default=[], help="only this case (repeatable)")
    parser.add_argument("--set", choices=("basic", "full"), default="basic")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    why = _missing()
    if why is not None:
        print(f"bench_ncu: {why}")
        return 3
    cases = [f"--case={c}" for c in args.case]
    t_plain, code, plain, said = run_bench(args.path, cases)
    if plain is None:
        print(f"bench_ncu: cuship bench exited {code} without a report: {said}")
        return 3 if code == 3 else 1
    profile = ["--profile", "ncu", "--ncu-set", args.set]
    if args.set == "full":
        profile += ["--ncu-reports", str(args.json.parent / "ncu") if args.json else "ncu-reports"]
    t_prof, code_prof, profiled, said = run_bench(args.path, [*cases, *profile])
    if profiled is None:
        print(f"bench_ncu: cuship bench --profile ncu exited {code_prof} without a report: {said}")
        return 3 if code_prof == 3 else 1
    found = rows(plain, profiled)
    count = max(1, len(found))
    meta = profiled["run"]["meta"].get("profile", {})
    print(f"{profiled['run']['fingerprint'].get('gpu')}, ncu {meta.get('version')}, set {args.set}")
    print_table(found)
    ncu_walls = [r["ncu_wall"] for r in found if r["ncu_wall"] is not None]
    summary: dict[str, Any] = {
        "cases": len(found),
        "wall_plain_s": t_plain,
        "wall_profiled_s": t_prof,
        "overhead_per_case_s": (t_prof - t_plain) / count,
        "ncu_run_per_case_s": sum(ncu_walls) / len(ncu_walls) if ncu_walls else None,
        "profiled_exit_code": code_prof,
        "bw_agreement": {
            k: sum(r["bw_result"] == k for r in found) for k in ("PASS", "MISS", "short", "SKIP")
        },
        "peak_agreement": {
            k: sum(r["peak_result"] == k for r in found) for k in ("PASS", "MISS", "short", "SKIP")
        },
        "bytes_agreement": {
            k: sum(r["bytes_result"] == k for r in found) for k in ("PASS", "MISS", "short", "SKIP")
        },
    }
    print(
        f"\nwall: {t_plain:.1f} s plain, {t_prof:.1f} s with --profile ncu: "
        f"+{summary['overhead_per_case_s']:.2f} s per case "
        f"(each case's ncu run {_f(summary['ncu_run_per_case_s'], 1, '.2f')} s)"
    )
    print(f"cuship GB/s vs ncu DRAM GB/s within 10 %: {summary['bw_agreement']}")
    print(f"cuship % of peak vs ncu DRAM % of peak within 10 %: {summary['peak_agreement']}")
    print(f"cuship bytes vs ncu DRAM bytes within 10 %: {summary['bytes_agreement']}")
    for r in found:
        if r["bw_result"] == "MISS" and r["outside_kernels_s"] is not None:
            print(
                f"  {r['key']}: its kernels are {r['kernel_share']:.0%} of the timed call "
                f"({r['outside_kernels_s'] * 1e6:.1f} µs outside them); bytes ratio "
                f"{r['bytes_ratio']:.3f} ({r['bytes_result']})"
            )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps({"summary": summary, "rows": found, "meta": meta}, indent=2)
        )
    return 0 if not summary["bw_agreement"]["MISS"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
