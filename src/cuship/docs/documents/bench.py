"""The JSON Schemas of ``cuship bench --json`` (:func:`cuship.bench.results.to_json`, also what
``--export json`` writes), ``cuship bench --burn-in DUR --json``
(:meth:`BurnIn.to_json <cuship.bench.burnin.BurnIn.to_json>`) and ``cuship bench history
--json`` (:meth:`HistoryReport.to_json <cuship.bench.history.report.HistoryReport.to_json>`)."""

from __future__ import annotations

from typing import get_args

from cuship.bench.ncu.profile import NcuSet
from cuship.bench.peak import DtypeOrigin
from cuship.bench.results import FORMAT, Status
from cuship.bench.stats import Verdict
from cuship.bench.timers.hot import HotMethod
from cuship.bench.timers.measure import StopReason
from cuship.docs.documents._parts import Schema, array, closed, enum, maybe, of
from cuship.docs.documents.check import provenance

__all__ = ["DOCUMENTS", "bench_schema", "burn_in_schema", "history_schema"]

_NUMBERS = {"type": "number"}
_VERDICTS = ("errored", "regressed", "floor-missed", "no-floor", "ok")


def _text(description: str) -> Schema:
    return maybe(of("string", ""), description)


def _number(description: str) -> Schema:
    return maybe(of("number", ""), description)


def _fingerprint() -> Schema:
    return closed(
        "The machine the run was timed on; runs with the same `machine_id` may be compared.",
        {
            "gpu": _text("GPU 0's name; null: no GPU."),
            "gpu_count": of("integer", "GPUs.", minimum=0),
            "driver": _text("The NVIDIA driver's version."),
            "cuda": _text("The CUDA toolkit's version, else the driver's."),
            "sm_clock_mhz": maybe(of("integer", ""), "GPU 0's SM clock at the start (NVML)."),
            "max_sm_clock_mhz": maybe(of("integer", ""), "GPU 0's highest SM clock (NVML)."),
            "power_limit_w": _number("GPU 0's power limit in watts (NVML)."),
            "cpu_model": of("string", "The CPU's model."),
            "cpu_count": of("integer", "CPUs.", minimum=0),
            "python": of("string", "The Python version."),
            "packages": of(
                "object",
                "The versions of numpy, torch and the like, and the project's.",
                additionalProperties={"type": "string"},
            ),
            "timer": of("string", "The timer (`cuda-events`, `wall`, `instructions`)."),
            "notes": array("What the machine probe could not see (a failing NVML)."),
            "machine_id": of("string", "12 hex digits naming the comparable parts."),
        },
    )


def _session() -> Schema:
    session = closed(
        "How the points were profiled (`--profile ncu`).",
        {
            "tool": enum(("ncu",), "The profiler."),
            "set": enum(get_args(NcuSet), "The metric set."),
            "ncu": of("string", "The ncu that ran."),
            "version": _text("Its version."),
            "metrics": array("The metrics read."),
            "reports": _text("Where the `.ncu-rep` files were kept; null: not kept."),
        },
    )
    return session


def _meta() -> Schema:
    return closed(
        "How the run was made.",
        {
            "format": enum((FORMAT,), "The document's format."),
            "seeds": of("integer", "Input seeds (fixed protocol; 1 when adaptive).", minimum=1),
            "repeats": of("integer", "Samples per seed (0: adaptive).", minimum=0),
            "label": _text("The run's `--label`."),
            "code_hash": of(
                "object", "Each case's code hash.", additionalProperties={"type": "string"}
            ),
            "path": of("string", "The PATH benchmarked."),
            "provenance": provenance(),
            "profile": _session(),
        },
        optional=("profile",),
    )


def _ncu_profile(description: str) -> Schema:
    return closed(
        description,
        {
            "set": enum(get_args(NcuSet), "The metric set."),
            "kernels": of("integer", "Kernel launches in the call.", minimum=0),
            "kernel_names": array("Their short names, in launch order."),
            "kernel_time": _number("Seconds, summed over the kernels."),
            "dram_bytes_per_s": _number("DRAM throughput."),
            "dram_peak_fraction": _number("DRAM throughput as a share of peak."),
            "occupancy_fraction": _number("Achieved occupancy."),
            "sm_fraction": _number("SM throughput as a share of peak."),
            "report": _text("The kept `.ncu-rep`."),
            "wall_time": _number("Seconds the whole ncu run took."),
            "error": _text("Why the call could not be profiled; null: it was."),
        },
    )


def _hot() -> Schema:
    hot = closed(
        "Per-call seconds of back-to-back calls.",
        {
            "per_call": of("number", "The median per call."),
            "samples": array("Per-call seconds, one per replay.", _NUMBERS),
            "calls": of("integer", "Calls per replay.", minimum=0),
            "method": enum(get_args(HotMethod), "How they were timed."),
            "note": _text("What limits the figure, if anything."),
        },
    )
    return maybe(hot, "The hot per-call time; null: not measured (CUDA timer only).")


def _peak() -> Schema:
    share = closed(
        "Its share of the GPU's datasheet peaks.",
        {
            "variant": of("string", "The GPU variant the peaks are of."),
            "source": of("string", "Where the peaks come from."),
            "dtype": of("string", "The precision the FLOP/s are compared in."),
            "dtype_origin": enum(get_args(DtypeOrigin), "Where that precision came from."),
            "memory_gbps": of("number", "The variant's memory bandwidth, GB/s."),
            "bandwidth_fraction": _number("The share of it reached; null: no bytes model."),
            "precision": _text("The peak compared with (`bf16`, `fp64_tensor`)."),
            "peak_tflops": _number("That peak, TFLOP/s."),
            "flops_fraction": _number("The share of it reached; null: no flops model."),
            "note": _text("What to know about the comparison."),
        },
    )
    return maybe(share, "Its share of the GPU's peaks; null: not compared.")


def _payload() -> Schema:
    work = closed(
        "The case's work model at this point; null where not modelled.",
        {w: _number(f"The {w} one call moves or does.") for w in ("bytes", "flops", "ops")},
    )
    return closed(
        "The point as stored: every sample and what was measured with it.",
        {
            "case": of("string", "The case."),
            "params": of("object", "The point's parameters, as the case declares them."),
            "unit": enum(("s", "instructions"), "What a sample counts."),
            "samples": array("Every sample, per call.", _NUMBERS),
            "throttled": array("The samples taken under 0.9 x max SM clock.", {"type": "integer"}),
            "work": work,
            "rel_noise": _number("The median's relative noise."),
            "stop_reason": maybe(enum(get_args(StopReason), ""), "Why sampling stopped."),
            "error": _text("Why the point errored."),
            "clocks": array("The SM clock after each sample (MHz).", {"type": ["integer", "null"]}),
            "max_clock_mhz": maybe(of("integer", ""), "The GPU's highest SM clock."),
            "drop_throttled": of("boolean", "Throttled samples were left out."),
            "hot": _hot(),
            "peak": _peak(),
            "notes": array("What a reader must know to trust the number."),
            "ncu": _ncu_profile("One call under ncu (`--profile ncu`)."),
        },
        optional=("ncu",),
    )


def _clocks() -> Schema:
    return closed(
        "Clocks and throttling over the samples.",
        {
            "throttled": of("integer", "Samples under the clock threshold.", minimum=0),
            "throttled_fraction": _number("Their share; null: clocks not read."),
            "median_mhz": _number("The median SM clock."),
            "max_mhz": maybe(of("integer", ""), "The highest SM clock."),
            "drop_throttled": of("boolean", "Throttled samples were left out."),
            "dropped": of("integer", "Samples left out.", minimum=0),
            "samples_used": of("integer", "Samples the statistics use.", minimum=0),
        },
    )


def _timing() -> Schema:
    return closed(
        "Cold and hot per call side by side.",
        {
            "cold_median": _number("The cold median per call, seconds."),
            "hot_per_call": _number("The hot per-call time, seconds."),
            "hot_method": maybe(enum(get_args(HotMethod), ""), "How it was timed."),
            "hot_calls": maybe(of("integer", ""), "Calls per replay."),
            "hot_samples": array("Hot per-call seconds, one per replay.", _NUMBERS),
            "launch_bound": of("boolean", "Hot is well under cold: launch latency dominates."),
            "explanation": _text("What launch-bound means, when it is."),
        },
    )


def _comparison() -> Schema:
    return closed(
        "Current against the baseline (or the `--compare-with` build).",
        {
            "verdict": enum(get_args(Verdict), "The verdict."),
            "ratio": of("number", "Current median over the baseline's."),
            "low": _number("The ratio's confidence interval, low end."),
            "high": _number("The ratio's confidence interval, high end."),
            "threshold": of("number", "The change that counts."),
            "more_samples": maybe(of("integer", ""), "Samples that would decide an UNSURE."),
        },
    )


def _floor() -> Schema:
    return closed(
        "The throughput floor applied to the point.",
        {
            "machine": of("string", "The floor's machine label (`H100`)."),
            "floor": of("number", "The floor."),
            "unit": of("string", "Its unit (`ops/s`, `GB/s`)."),
            "measured": _number("What was measured in that unit."),
            "missed": of("boolean", "The floor was missed."),
        },
    )


def _result() -> Schema:
    return closed(
        "One case at one parameter point.",
        {
            "key": of("string", "The point (`saxpy[n=1024]`)."),
            "status": enum(get_args(Status), "How it went."),
            "payload": _payload(),
            "numbers": of(
                "object",
                "median, mean, min, stdev, rel_noise, throughputs, clocks, shares of peak, ncu.",
                additionalProperties=_NUMBERS,
            ),
            "notes": array("What a reader must know to trust the number."),
            "clocks": _clocks(),
            "timing": _timing(),
            "peak": _peak(),
            "ncu": _ncu_profile("One call under ncu (`--profile ncu`)."),
            "comparison": _comparison(),
            "floor": _floor(),
        },
        optional=("clocks", "timing", "peak", "ncu", "comparison", "floor"),
    )


def bench_schema() -> Schema:
    """``cuship bench --json``: the run, its machine and every point."""
    run = closed(
        "The run.",
        {
            "id": maybe(of("integer", ""), "Its id in the results store; null: not stored."),
            "kind": enum(("bench",), "The kind of run."),
            "project": of("string", "The project."),
            "started": of("number", "When timing started (seconds since the epoch)."),
            "finished": of("number", "When it finished."),
            "verdict": enum(_VERDICTS, "The run's verdict."),
            "fingerprint": _fingerprint(),
            "meta": _meta(),
            "baseline": _text("What it was compared with; null: nothing."),
        },
    )
    return closed(
        "What `cuship bench --json` prints (and `--export json` writes): the run, the "
        "machine it was timed on and every point with its samples, figures and verdicts.",
        {
            "format": enum((FORMAT,), "The document's format."),
            "cuship_version": of("string", "The cuship version that ran."),
            "run": run,
            "results": array("Every point, in run order.", _result()),
        },
    )


def burn_in_schema() -> Schema:
    """``cuship bench --burn-in DUR --json``: memory over a long run of one point."""
    trend = closed(
        "The growth of one memory series.",
        {
            "name": of("string", "The series (`host RSS`, `GPU memory`)."),
            "slope_bytes_per_s": of("number", "Its Theil-Sen slope."),
            "low": of("number", "The slope's 95 % interval, low end."),
            "high": of("number", "The slope's 95 % interval, high end."),
            "growth_bytes": of("number", "The growth over the run."),
            "leaking": of("boolean", "It grows, surely and by more than the tolerance."),
        },
    )
    samples = closed(
        "The memory samples.",
        {
            "t": array("Seconds since the start.", _NUMBERS),
            "rss": array("Host RSS in bytes.", {"type": "integer"}),
            "gpu": array("GPU memory allocated in bytes (0s without CUDA).", {"type": "integer"}),
        },
    )
    return closed(
        "What `cuship bench --burn-in DUR --json` prints: one point called over and over, "
        "its memory sampled, and whether it keeps growing.",
        {
            "key": of("string", "The point."),
            "duration_s": of("number", "Seconds it ran.", minimum=0),
            "calls": of("integer", "Calls made.", minimum=0),
            "error": _text("Why it stopped early; null: it ran to the end."),
            "leaking": of("boolean", "A series keeps growing."),
            "samples": samples,
            "trends": array("Each series' trend, warm-up left out.", trend),
        },
    )


def history_schema() -> Schema:
    """``cuship bench history --json``: each series and its step changes."""
    step = closed(
        "A step change.",
        {
            "index": of("integer", "The position of the first point after it.", minimum=0),
            "first_run_after": of("integer", "The first run after it."),
            "started": of("number", "When that run started."),
            "label": _text("That run's label."),
            "before": of("number", "The level before."),
            "after": of("number", "The level after."),
            "rel_change": of("number", "after / before - 1."),
            "direction": enum(("slower", "faster"), "Which way."),
            "p_value": of("number", "The permutation test's p-value."),
            "score": of("number", "How much it lowers the cost."),
        },
    )
    series = closed(
        "One point on one machine over the stored runs.",
        {
            "machine_id": of("string", "The machine."),
            "key": of("string", "The point."),
            "case": of("string", "The case."),
            "params": of("object", "The point's parameters."),
            "unit": of("string", "What the medians count (`s`)."),
            "runs": array("The run ids, oldest first.", {"type": "integer"}),
            "medians": array("Each run's median.", _NUMBERS),
            "noise": of("number", "The relative run-to-run noise."),
            "steps": array("The step changes found.", step),
        },
    )
    return closed(
        "What `cuship bench history --json` prints: each series of stored bench results and "
        "the step changes in it.",
        {
            "store": of("string", "The results store read."),
            "series": array("Each series.", series),
        },
    )


DOCUMENTS = {
    "bench": ("cuship bench --json", bench_schema),
    "bench-burn-in": ("cuship bench --burn-in DUR --json", burn_in_schema),
    "bench-history": ("cuship bench history --json", history_schema),
}
