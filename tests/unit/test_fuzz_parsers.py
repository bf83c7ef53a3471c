"""Every parser of untrusted input returns a value or raises a CushipError of exit 2, never
another exception and never a hang (issue 43): short Hypothesis runs over
:data:`tests.fuzz_targets.TARGETS`, derandomized so CI sees the same inputs every run
(``benchmarks/fuzz_parsers.py`` runs each for minutes). The crashes the long runs found are
kept below as regression inputs."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from tests.fuzz_targets import TARGETS, Broken, Target, holds

SHORT = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_a_parser_returns_or_says_exit_2(target: Target) -> None:
    @SHORT
    @given(target.inputs)
    def run(data: Any) -> None:
        holds(target.name, target.parse, data)

    run()


# Inputs the fuzzer found that broke the contract before they were fixed (each was an exit 70).
REGRESSIONS: list[tuple[str, Any]] = [
    ("variants.json", b'{"variants": {"zz": {"nvidia": "x"}}}'),
    ("variants.json", b'{"variants": {"zz": {"nvidia": {"sm_arch": 5}}}}'),
    ("variants.json", '{"variants": {"zz": {"nvidia": {"cuda_version_lower_bound": ["²"]}}}}'.encode()),
    ("check baseline", b'{"format": 1, "seed": 1e400, "entries": {}}'),
    ("check baseline", b'{"format": 1, "entries": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
    ("check baseline", b'{"format": 1, "device": "caf\xe9", "entries": {}}'),
    ("check baseline", b'{"format": 1, "entries": {"k": {"status": "passed", "cases": 1e300}}}'),
    ("bench baseline", b'{"format": 3, "run": {"fingerprint": []}, "results": [{"key": 1}]}'),
    ("RECORD", b",,\xc2\xb2"),  # a size of "²": str.isdigit says yes, int() says no
    ("torch version.py", "cuda = '²'"),
    ("nvcc argv", (["-c", "x.cu", "-Xptxas", "-arch=sm_90", "-O2"], "rewrite")),
]  # fmt: skip


@pytest.mark.parametrize(("name", "data"), REGRESSIONS)
def test_what_the_fuzzer_found_stays_fixed(name: str, data: Any) -> None:
    (target,) = [t for t in TARGETS if t.name == name]
    holds(name, target.parse, data)


def test_the_contract_catches_a_bug_and_a_hang() -> None:
    def bug(data: Any) -> None:
        raise KeyError(data)

    with pytest.raises(Broken, match="exit 70: KeyError"):
        holds("planted", bug, "x")

    def hang(data: Any) -> None:
        import time

        time.sleep(60)

    import tests.fuzz_targets as targets

    before = targets.GUARD_S
    targets.GUARD_S = 0.2
    try:
        with pytest.raises(Broken, match="hang"):
            holds("planted", hang, "x")
    finally:
        targets.GUARD_S = before
