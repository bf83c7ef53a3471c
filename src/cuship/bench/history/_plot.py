"""History plots as inline SVG, drawn in Python (no JavaScript library, no network), and value formats.

Every text that reaches the markup goes through :func:`html.escape`; numbers are formatted here.
"""

from __future__ import annotations

import datetime as dt
import itertools
import statistics
from collections.abc import Mapping, Sequence
from html import escape

from cuship.bench.history.changepoints import History, Point
from cuship.bench.timers.hot import LAUNCH_BOUND_RATIO

__all__ = [
    "STEP_COLOUR",
    "format_clock",
    "format_hot",
    "format_ncu",
    "format_throughput",
    "format_value",
    "history_svg",
    "when",
]

STEP_COLOUR = "#e4007c"  # change points only: the screenshot test looks for this colour
LINE_COLOUR = "#1f6fb4"
WIDTH, HEIGHT = 760, 260
LEFT, RIGHT, TOP, BOTTOM = 78, 18, 24, 40

_TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))
_COUNT_UNITS = ((1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
_THROUGHPUT = (("tflops", "TFLOP/s"), ("gbps", "GB/s"), ("ops_per_s", "ops/s"))


def when(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def format_value(value: float, unit: str) -> str:
    """``1.234 ms`` for seconds, ``1.23 M instructions`` for counts."""
    table = _TIME_UNITS if unit == "s" else _COUNT_UNITS
    scale, name = next(((s, n) for s, n in table if abs(value) >= s), table[-1])
    suffix = name if unit == "s" else f"{name} {unit}".strip()
    return f"{value / scale:.4g} {suffix}".strip()


def format_throughput(numbers: Mapping[str, float]) -> str:
    """The throughputs a result has, most telling first (TFLOP/s, GB/s, ops/s), with its share
    of the GPU's peaks where known; ``-`` if none."""
    parts = [f"{numbers[k]:.4g} {name}" for k, name in _THROUGHPUT if k in numbers]
    if "ceiling_fraction" in numbers:
        parts.append(f"{numbers['ceiling_fraction']:.0%} of ceiling")
    for key, name in (("peak_flops_fraction", "FLOP/s"), ("peak_bandwidth_fraction", "BW")):
        if key in numbers:
            parts.append(f"{numbers[key]:.0%} of peak {name}")
    return ", ".join(parts) or "-"


def format_clock(numbers: Mapping[str, float]) -> str:
    """``"84% throttled, 1755/1980 MHz"`` from a stored result's numbers; ``-`` when unknown."""
    if "throttled_fraction" not in numbers:
        return "-"
    text = f"{numbers['throttled_fraction']:.0%} throttled"
    if "sm_clock_median_mhz" in numbers:
        top = numbers.get("sm_clock_max_mhz")
        text += f", {numbers['sm_clock_median_mhz']:.0f}/{top:.0f} MHz" if top else ""
    if numbers.get("dropped_samples"):
        text += f", {numbers['dropped_samples']:.0f} samples dropped"
    return text


def format_hot(numbers: Mapping[str, float]) -> str:
    """The hot per-call time, marked when it is under half the cold median; ``-`` if none."""
    if "hot_per_call" not in numbers:
        return "-"
    text = format_value(numbers["hot_per_call"], "s")
    ratio = numbers.get("hot_over_cold")
    bound = ratio is not None and ratio < LAUNCH_BOUND_RATIO
    return text + (" (launch-bound)" if bound else "")


def format_ncu(numbers: Mapping[str, float]) -> dict[str, str] | None:
    """ncu's figures of a profiled result, for the dashboard's columns (kernel time, DRAM
    GB/s and % of peak, achieved occupancy, SM throughput, cuship's bandwidth over ncu's);
    None when the result was not profiled."""
    if "ncu_kernel_time" not in numbers:
        return None

    def share(key: str) -> str:
        return f"{numbers[key]:.0%}" if key in numbers else "-"

    dram = f"{numbers['ncu_dram_gbps']:.4g} GB/s" if "ncu_dram_gbps" in numbers else "-"
    if "ncu_dram_peak_fraction" in numbers:
        dram += f" ({share('ncu_dram_peak_fraction')} of peak)"
    ratio = numbers.get("ncu_bw_ratio")
    return {
        "kernel": format_value(numbers["ncu_kernel_time"], "s"),
        "dram": dram,
        "occupancy": share("ncu_occupancy_fraction"),
        "sm": share("ncu_sm_fraction"),
        "agreement": f"{ratio:.2f}x" if ratio is not None else "-",
    }


def _quartiles(point: Point) -> tuple[float, float]:
    if len(point.samples) < 2:
        return point.median, point.median
    q1, _, q3 = statistics.quantiles(point.samples, n=4)
    return q1, q3


class _Frame:
    """Maps (run position, value) to SVG coordinates."""

    def __init__(self, count: int, low: float, high: float) -> None:
        pad = (high - low) * 0.08 or abs(high) * 0.05 or 1.0
        self.low, self.high = low - pad, high + pad
        self.count = count

    def x(self, i: float) -> float:
        span = WIDTH - LEFT - RIGHT
        return LEFT + (span * i / (self.count - 1) if self.count > 1 else span / 2)

    def y(self, v: float) -> float:
        return TOP + (HEIGHT - TOP - BOTTOM) * (self.high - v) / (self.high - self.low)


def _axes(frame: _Frame, points: Sequence[Point], unit: str) -> list[str]:
    out = [
        f'<line class="axis" x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" y2="{HEIGHT - BOTTOM}"/>',
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}"/>',
    ]
    for k in range(5):
        v = frame.low + (frame.high - frame.low) * k / 4
        y = frame.y(v)
        out.append(
            f'<line class="grid" x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}"/>'
        )
        label = escape(format_value(v, unit))
        out.append(
            f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{label}</text>'
        )
    stride = max(1, len(points) // 8)
    for i in range(0, len(points), stride):
        x = frame.x(i)
        out.append(
            f'<text class="tick" x="{x:.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">'
            f"{points[i].run_id}</text>"
        )
    out.append(
        f'<text class="tick" x="{(LEFT + WIDTH - RIGHT) / 2:.0f}" y="{HEIGHT - 6}" '
        'text-anchor="middle">run</text>'
    )
    return out


def _levels(frame: _Frame, hist: History) -> list[str]:
    """The median level of each segment between change points, and the change-point markers."""
    medians = [p.median for p in hist.series.points]
    bounds = [0, *(s.index for s in hist.steps), len(medians)]
    out = []
    for a, b in itertools.pairwise(bounds):
        y = frame.y(statistics.median(medians[a:b]))
        out.append(
            f'<line class="level" x1="{frame.x(a):.1f}" y1="{y:.1f}" x2="{frame.x(b - 1):.1f}" y2="{y:.1f}"/>'
        )
    for step in hist.steps:
        x = round(frame.x(step.index - 0.5))
        tip = escape(
            f"step: {step.rel_change:+.1%} {step.direction} from run {step.run_id}"
            + (f" ({step.label})" if step.label else "")
        )
        out.append(
            f'<g class="step-marker" data-run="{step.run_id}"><title>{tip}</title>'
            f'<line x1="{x}" y1="{TOP}" x2="{x}" y2="{HEIGHT - BOTTOM}" stroke="{STEP_COLOUR}" '
            'stroke-width="2" stroke-dasharray="5 3"/>'
            f'<rect x="{x - 6}" y="{TOP - 12}" width="12" height="12" fill="{STEP_COLOUR}"/></g>'
        )
    return out


def _points(frame: _Frame, points: Sequence[Point], unit: str) -> list[str]:
    coords = " ".join(f"{frame.x(i):.1f},{frame.y(p.median):.1f}" for i, p in enumerate(points))
    out = [f'<polyline class="median" points="{coords}" fill="none" stroke="{LINE_COLOUR}"/>']
    for i, p in enumerate(points):
        q1, q3 = _quartiles(p)
        x = frame.x(i)
        out.append(
            f'<line class="spread" x1="{x:.1f}" y1="{frame.y(q1):.1f}" x2="{x:.1f}" y2="{frame.y(q3):.1f}"/>'
        )
        tip = f"run {p.run_id}" + (f" · {p.label}" if p.label else "")
        tip += f" · {when(p.started)} · median {format_value(p.median, unit)} · {len(p.samples)} samples"
        out.append(
            f'<circle class="point" cx="{x:.1f}" cy="{frame.y(p.median):.1f}" r="3.5" '
            f'fill="{LINE_COLOUR}" data-tip="{escape(tip)}"><title>{escape(tip)}</title></circle>'
        )
    return out


def history_svg(hist: History) -> str:
    """One history plot: medians per run, interquartile range of the samples, segment levels and
    change points (dashed line and square marker in :data:`STEP_COLOUR`)."""
    points = hist.series.points
    values = [v for p in points for v in (p.median, *_quartiles(p))]
    frame = _Frame(len(points), min(values), max(values))
    unit = hist.series.unit
    title = escape(f"{hist.series.key} on {hist.series.machine_id}")
    body = [
        f'<svg class="plot" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{title}" '
        f'data-points="{len(points)}" data-steps="{len(hist.steps)}">',
        f"<title>{title}</title>",
        *_axes(frame, points, unit),
        *_levels(frame, hist),
        *_points(frame, points, unit),
        "</svg>",
    ]
    return "\n".join(body)
