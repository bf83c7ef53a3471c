"""The instruction-count gate (benchmarks/instr_gate.py): each everyday path of cuship, counted
under callgrind, stays within its margin of the stored baseline (benchmarks/instr_baseline.json),
and a slowdown planted on purpose (one more pass over the site's wheels before an update) fails
the gate, naming the path and its ratio. Counts do not depend on the machine's load, so this is
no timed assertion. After an intended change of a count: python3 benchmarks/instr_gate.py
--record (the failure says so)."""

from __future__ import annotations

import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from benchmarks import instr_gate
from benchmarks._instr import RECORD_COMMAND

pytestmark = pytest.mark.integration

LOCAL = ("help", "index-plus1", "index-rerun", "resolve", "doctor")


def _valgrind() -> str:
    found = shutil.which("valgrind")
    assert found, "valgrind is not on PATH: tools/test-deps installs it (apt-get install valgrind)"
    return found


@pytest.fixture(scope="module")
def inputs() -> Iterator[instr_gate.Inputs]:
    """The gate's inputs for the local paths: the 5,000 wheels (made once, kept in the temp
    folder across runs), the sites made from them now."""
    _valgrind()
    made = instr_gate.prepare(instr_gate.default_work(), LOCAL)
    yield made
    made.close()


def _judged(counts: dict[str, list[int]]) -> tuple[int, str]:
    said: list[str] = []
    code = instr_gate.judge(counts, instr_gate.BASELINE, said.append)
    return code, "\n".join(said)


def test_every_local_path_is_within_its_baseline(inputs: instr_gate.Inputs) -> None:
    counts = instr_gate.count_all(inputs, LOCAL, repeat=1, jobs=2, plant=None)
    code, said = _judged(counts)
    assert code == 0, said
    assert all(counts[path][0] > 100_000_000 for path in LOCAL), counts  # whole processes


def test_a_planted_extra_pass_over_the_wheels_fails_the_gate(inputs: instr_gate.Inputs) -> None:
    # the launcher that plants nothing stays within the margin: what fails below is the pass
    quiet = instr_gate.count_all(inputs, ["index-plus1"], repeat=1, jobs=1, plant="none")
    assert _judged(quiet)[0] == 0
    planted = instr_gate.count_all(inputs, ["index-plus1"], repeat=1, jobs=1, plant="extra-pass")
    code, said = _judged(planted)
    assert code == 1
    assert "index-plus1" in said and "x its baseline" in said and RECORD_COMMAND in said
    assert planted["index-plus1"][0] > 1.05 * quiet["index-plus1"][0]


def _pypi() -> str | None:
    try:
        with urllib.request.urlopen(instr_gate.CUDA_WHEEL_URL, timeout=20):
            return None
    except (urllib.error.URLError, OSError) as err:
        return f"PyPI cannot be reached ({err}): no real CUDA wheel to inspect"


@pytest.mark.network
def test_inspecting_a_real_cuda_wheel_is_within_its_baseline() -> None:
    _valgrind()
    reason = _pypi()
    if reason is not None:
        pytest.skip(reason)
    made = instr_gate.prepare(instr_gate.default_work(), ["inspect"])
    try:
        counts = instr_gate.count_all(made, ["inspect"], repeat=1, jobs=1, plant=None)
    finally:
        made.close()
    code, said = _judged(counts)
    assert code == 0, said
