"""How far an index is through the wheels given: progress events of topic ``index``, stage
``scan``, one per wheel scanned (read and hashed, found in the cache, or skipped), counted in
all the processes a rebuild forks.

A rebuild's shares each count in their own slot of a :class:`~cuship.index._pool.Tally`;
this process, as its own share's wheels are scanned, emits the count of all of them (a child
only counts: its events would come back only when it ends). An update's scan runs here, and
its workers' results come back a chunk at a time. The renderer picks the lines a log shows
(``cuship.cli._progress``), so every wheel is an event here.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from cuship.events import Emit, progress
from cuship.index._pool import Tally, in_child

__all__ = ["Counted", "ScanProgress", "uncounted"]

Counted = Callable[[int, str], None]
"""Told that ``count`` more files were scanned, the last of them named ``item``."""


def uncounted(count: int, item: str) -> None:
    """A :data:`Counted` that keeps no count."""
    del count, item


class ScanProgress:
    """The scan of ``total`` files, told to ``emit``, in ``shares`` processes at most."""

    def __init__(self, total: int, emit: Emit, *, shares: int = 1) -> None:
        self.total, self.emit = total, emit
        self._tally = Tally(shares)
        self._started = time.monotonic()

    def counter(self, slot: int) -> Counted:
        """What share ``slot`` tells of its files, called in the process that scans them."""
        if in_child():
            return lambda count, item: self._tally.add(slot, count)

        def counted(count: int, item: str) -> None:
            self._tally.add(slot, count)
            done = self._tally.total()
            if count and done < self.total:  # the last line is finish's
                self._emit(done, item)

        return counted

    def finish(self, read: int, cached: int) -> None:
        """The last line, once every share is done: how many files were read, how many not."""
        seconds = time.monotonic() - self._started
        status = f"{read} read, {cached} from the cache"
        if self.total:
            self._emit(self.total, "wheels", status, seconds)

    def _emit(
        self, done: int, item: str, status: str | None = None, seconds: float | None = None
    ) -> None:
        self.emit(progress("index", done, self.total, item, status, seconds, stage="scan"))
