"""`cuship index` tells how far it is through the wheels given: a progress event as wheels are
scanned (read, found in the cache or skipped), each thousandth of them at most, and a last one
with what was read."""

from __future__ import annotations

from pathlib import Path

from cuship.events import Event, collect
from cuship.index import write
from cuship.index._pool import ScanProgress, Tally, map_spread
from tests.wheel_factory import make_wheel


def _scan(events: list[Event]) -> list[tuple[int, int, str]]:
    return [
        (int(str(e.data["done"])), int(str(e.data["total"])), e.message)
        for e in events
        if e.topic == "index" and e.level == "progress" and e.data.get("stage") == "scan"
    ]


def test_each_wheel_scanned_moves_the_count_and_the_last_line_says_what_was_read(
    tmp_path: Path,
) -> None:
    wheels = tmp_path / "wheels"
    for version in ("1.0", "1.1", "1.2"):
        make_wheel(wheels, "demo", version)
    (wheels / "broken-1.0-py3-none-any.whl").write_bytes(b"PK\x03\x04 truncated")
    events: list[Event] = []
    write([wheels], tmp_path / "site", emit=collect(events))
    scan = _scan(events)
    assert [done for done, _, _ in scan] == [1, 2, 3, 4]
    assert {total for _, total, _ in scan} == {4}
    assert scan[-1][2].startswith("[scan 4/4] wheels: 4 read, 0 from the cache in ")

    events.clear()
    make_wheel(wheels, "demo", "1.3")
    write([wheels], tmp_path / "site", emit=collect(events))  # an update: the rest from cache
    # the new wheel and the broken file read again, the wheels of the first run not
    assert _scan(events)[-1][2].startswith("[scan 5/5] wheels: 2 read, 3 from the cache")


def test_nothing_given_to_scan_tells_nothing() -> None:
    events: list[Event] = []
    ScanProgress(0, collect(events)).finish(0, 0)
    assert events == []


def test_the_count_adds_every_share_s_slot_and_leaves_the_last_line_to_finish() -> None:
    events: list[Event] = []
    scan = ScanProgress(10, collect(events), shares=2)
    here = scan.counter(0)
    scan._tally.add(1, 4)  # what a child counted in its slot
    here(3, "a.whl")
    here(3, "b.whl")  # 10 of 10: finish says it
    scan.finish(9, 1)
    assert [e.message for e in events][:1] == ["[scan 7/10] a.whl"]
    assert events[-1].message.startswith("[scan 10/10] wheels: 9 read, 1 from the cache in ")
    assert len(events) == 2


def test_a_tally_counts_per_slot() -> None:
    tally = Tally(3)
    tally.add(0, 2)
    tally.add(2, 5)
    tally.add(0, 1)
    assert tally.total() == 8


def test_map_spread_tells_of_each_result_in_order() -> None:
    told: list[int] = []
    assert map_spread(abs, [-1, -2, -3], each=told.append) == [1, 2, 3]
    assert told == [0, 1, 2]


def test_a_large_scan_is_told_each_thousandth() -> None:
    events: list[Event] = []
    scan = ScanProgress(50_000, collect(events))
    counted = scan.counter(0)
    for _ in range(50_000):
        counted(1, "w.whl")
    scan.finish(50_000, 0)
    done = [int(str(e.data["done"])) for e in events]
    assert done[:3] == [1, 51, 101] and done[-2:] == [49_951, 50_000] and len(done) == 1001
