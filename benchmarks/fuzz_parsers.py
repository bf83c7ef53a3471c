"""Fuzz each of cuship's parsers of untrusted input for minutes (issue 43), and say per parser
how many inputs ran and what broke the contract: return a value or raise a CushipError of exit
2, never another exception (exit 70), never a hang (a call past 5 s).

    python3 benchmarks/fuzz_parsers.py [--minutes N] [--only NAME ...] [--batch 2000]

The targets and their input strategies are ``tests/fuzz_targets.py``'s (the unit tests run
them briefly, derandomized). Here each runs batches of Hypothesis examples under fresh seeds
until its share of the time is spent; a batch that finds a break shrinks it, records it (once
per kind and message) and the run goes on. Findings become regression inputs in
``tests/unit/test_fuzz_parsers.py``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "src")]


def fuzz(target: Any, seconds: float, batch: int) -> tuple[int, dict[str, str]]:
    """(inputs run, {finding: the smallest input that shows it}) of ``target`` in ``seconds``."""
    from hypothesis import HealthCheck, given, seed, settings
    from tests.fuzz_targets import Broken, holds

    count = 0
    findings: dict[str, str] = {}
    ends = time.monotonic() + seconds
    shown = [""]  # the input being run: what a finding shows after shrinking
    while time.monotonic() < ends:

        @seed(random.getrandbits(64))
        @settings(
            max_examples=batch,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(target.inputs)
        def run(data: Any) -> None:
            nonlocal count
            count += 1
            shown[:] = [repr(data)[:300]]
            holds(target.name, target.parse, data)

        try:
            run()
        except Broken as err:
            findings.setdefault(f"{err.kind}: {err.detail[:120]}", shown[0])
    return count, findings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=2.0, help="per parser")
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--batch", type=int, default=2000)
    options = parser.parse_args()
    from tests.fuzz_targets import TARGETS

    print(f"{'parser':18} {'inputs':>9} {'per s':>7} {'findings':>8}")
    total = 0
    for target in TARGETS:
        if options.only and target.name not in options.only:
            continue
        started = time.monotonic()
        count, findings = fuzz(target, options.minutes * 60, options.batch)
        rate = count / max(time.monotonic() - started, 1e-9)
        total += len(findings)
        print(f"{target.name:18} {count:>9} {rate:>7.0f} {len(findings):>8}", flush=True)
        for finding, example in findings.items():
            print(f"    {finding}\n      smallest input: {example}", flush=True)
    sys.exit(1 if total else 0)


if __name__ == "__main__":
    main()
