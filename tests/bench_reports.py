"""Bench reports and timers made by hand, for tests of what a bench run reports."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cuship.bench.results import BenchReport, PointResult
from cuship.bench.timers.hot import Hot

FINGERPRINT: dict[str, Any] = {
    "machine_id": "abc123abc123",
    "gpu": "NVIDIA H100 80GB HBM3",
    "timer": "cuda",
}


def report_of(*results: PointResult, fingerprint: dict[str, Any] | None = None) -> BenchReport:
    """A one-run report holding ``results`` (fixed protocol, one seed)."""
    return BenchReport(
        project="demo",
        path=".",
        started=1_700_000_000.0,
        finished=1_700_000_001.0,
        fingerprint=fingerprint or FINGERPRINT,
        seeds=1,
        repeats=len(results[0].samples) if results else 0,
        label=None,
        code_hash={},
        results=results,
    )


class ScriptedTimer:
    """A Timer whose samples and SM clocks come from a script, cycling; no hot measurement."""

    calls_per_sample = 1

    def __init__(
        self,
        script: Sequence[tuple[float, int | None]],
        max_clock: int | None = 1980,
        hot: Hot | None = None,
    ) -> None:
        self.script = list(script)
        self.index = 0
        self.top = max_clock
        self.hot_result = hot
        self.checked = 0

    def prepare(self, call: Any) -> None:
        return None

    def check(self, make_call: Any) -> tuple[str, ...]:
        self.checked += 1
        return ()

    def sample(self, call: Any) -> tuple[float, int | None]:
        value = self.script[self.index % len(self.script)]
        self.index += 1
        return value

    def hot(self, call: Any, per_call: float) -> Hot | None:
        return self.hot_result

    def max_clock(self) -> int | None:
        return self.top
