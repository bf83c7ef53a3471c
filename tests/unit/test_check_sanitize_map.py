"""Mapping compute-sanitizer reports to check cases: streams built from the outputs recorded on an
H100 (tests/fixtures/h100/) with the markers a sanitized pass writes between them."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from cuship.check.sanitize import marks as _marks
from cuship.check.sanitize.map import MARK, attribute, marker, segments
from cuship.check.sanitize.stream import MarkedStream

H100 = Path(__file__).resolve().parents[1] / "fixtures" / "h100"
HEADER = "========= COMPUTE-SANITIZER\n"


def _recorded(name: str) -> tuple[list[str], str]:
    """A recorded output as (its records, each ending at its blank prefixed line; the rest:
    the program's own output and the summaries), without the header."""
    lines = (H100 / f"sanitizer-{name}.txt").read_text().splitlines(keepends=True)[1:]
    records: list[str] = []
    current = ""
    for index, line in enumerate(lines):
        if not line.startswith("========= ") and not line.startswith("=========\n"):
            return records, "".join(lines[index:])
        current += line
        if line.strip() == "=========":
            records.append(current)
            current = ""
    return records, current


def _start(worker: str, engine: str = "numba") -> str:
    return HEADER + marker("ready", worker) + marker("prepared", worker, engine)


def test_markers_cut_the_stream() -> None:
    text = "a\n" + marker("ready", "w1") + "b\nc\n" + marker("case", "7") + "d\n"
    cut = segments(text)
    assert [(s.event, s.label, s.text) for s in cut] == [
        ("ready", "w1", "a\n"),
        ("case", "7", "b\nc\n"),
        ("tail", "", "d\n"),
    ]
    assert marker("prepared", "w2", "triton") == f"{MARK} prepared w2 triton\n"


@pytest.mark.parametrize("tool", ["memcheck", "racecheck", "initcheck", "synccheck"])
def test_a_clean_run_maps_nothing_to_any_case(tool: str) -> None:
    _, summary = _recorded(f"{tool}-clean")
    stream = _start("w1") + marker("case", "1") + marker("case", "2") + summary
    stream += marker("exit", "w1")
    found = attribute(stream, ["1", "2"])
    assert found.cases == {"1": (), "2": ()}
    assert found.unattributed == () and found.errors == 0


def test_an_out_of_bounds_write_and_its_sticky_error_belong_to_the_case_that_broke_the_context() -> (
    None
):
    """Case 2 writes out of bounds; the launch failure shows at its synchronize (before its
    marker) and again as the broken worker exits (before ``exit w1``); the worker is replaced,
    and case 3 on the new one is clean."""
    records, rest = _recorded("memcheck-oob")
    oob, *api = records
    assert len(api) == 3
    stream = _start("w1") + marker("case", "1")
    stream += oob + api[0] + marker("case", "2")
    stream += api[1] + api[2] + rest + marker("exit", "w1")
    stream += _start("w2") + marker("case", "3")
    found = attribute(stream, ["1", "2", "3"])
    assert found.cases["1"] == () and found.cases["3"] == ()
    kinds = [f.kind for f in found.cases["2"]]
    assert kinds[0] == "Invalid __global__ write of size 4 bytes" and len(kinds) == 4
    assert all("cudaErrorLaunchFailure (error 719)" in k for k in kinds[1:])
    assert found.cases["2"][0].kernel_name == "oob_write"
    assert found.unattributed == () and found.errors == 4


def test_findings_after_the_last_marker_are_unattributed() -> None:
    records, rest = _recorded("racecheck-race")
    stream = _start("w1") + marker("case", "1") + records[0] + rest
    found = attribute(stream, ["1"])
    assert found.cases == {"1": ()}
    (stray,) = found.unattributed
    assert stray.where == "after the last marker"
    assert stray.findings[0].kind.startswith("Error: Race reported between Write access")


def test_findings_at_the_exit_of_a_worker_whose_last_case_was_clean_are_unattributed() -> None:
    records, _ = _recorded("memcheck-oob")
    stream = _start("w1") + marker("case", "1") + records[1] + marker("exit", "w1")
    found = attribute(stream, ["1"])
    assert found.cases == {"1": ()}
    (stray,) = found.unattributed
    assert stray.where == "at the exit of worker w1 (after case 1)"


def test_findings_while_a_worker_imports_an_engine_are_unattributed() -> None:
    records, _ = _recorded("initcheck-uninit")
    stream = HEADER + marker("ready", "w1") + records[0] + marker("prepared", "w1", "triton")
    stream += marker("case", "1")
    found = attribute(stream, ["1"])
    assert found.cases == {"1": ()}
    assert [s.where for s in found.unattributed] == ["importing engine triton in worker w1"]


def test_the_print_limit_and_the_totals() -> None:
    records, rest = _recorded("initcheck-uninit")
    stream = _start("w1") + "".join(records) + marker("case", "1") + rest + marker("exit", "w1")
    found = attribute(stream, ["1"])
    assert len(found.cases["1"]) == 20
    assert {f.where for f in found.cases["1"]} == {"planted.cu:20"}
    assert (found.errors, found.not_printed) == (1000, 980)


def test_errors_counted_but_not_read_fail_the_run() -> None:
    stream = _start("w1") + marker("case", "1") + "========= ERROR SUMMARY: 3 errors\n"
    found = attribute(stream, ["1"])
    (stray,) = found.unattributed
    assert stray.where == "in the summaries" and "3 errors" in stray.findings[0].kind


def test_the_fifo_keeps_both_writers_in_write_order(tmp_path: Path) -> None:
    """The parent's reader, a "sanitizer" and a "worker" writing in turn into one FIFO."""
    records, rest = _recorded("memcheck-oob")
    with MarkedStream(tmp_path / "memcheck.log") as stream:
        tool = os.open(stream.path, os.O_WRONLY)
        worker = _marks.Marks(str(stream.path), "w1")
        os.write(tool, HEADER.encode())
        worker.write("ready", "w1")
        worker.write("case", "1")
        os.write(tool, records[0].encode())
        worker.write("case", "2")
        assert stream.wait_for(marker("case", "2"), timeout=5)
        assert not stream.wait_for(marker("case", "3"), timeout=0.05)
        os.write(tool, rest.encode())
        os.close(tool)
        os.close(worker.fd)
        stream.write("exit", "w1")
        assert stream.wait_for(marker("exit", "w1"), timeout=5)
    assert not stream.path.exists()
    found = attribute(stream.text(), ["1", "2"])
    assert found.cases["1"] == () and len(found.cases["2"]) == 1
    assert found.unattributed == () and found.errors == 4


def test_a_reader_thread_sees_a_marker_written_later(tmp_path: Path) -> None:
    with MarkedStream(tmp_path / "s.log") as stream:
        late = threading.Timer(0.1, stream.write, args=("case", "9"))
        late.start()
        assert stream.wait_for(marker("case", "9"), timeout=5)
        late.join()


def test_synchronize_never_raises_without_a_gpu() -> None:
    _marks.synchronize()  # no torch/numba context, maybe no libcuda: nothing to wait for
