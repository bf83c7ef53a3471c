"""One byte-size text for every message: binary units, one decimal, none when it is zero."""

from __future__ import annotations

import pytest

from cuship._format import size_text


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0 bytes"),
        (1, "1 byte"),
        (1023, "1023 bytes"),
        (1024, "1 KiB"),
        (1536, "1.5 KiB"),
        (64 << 20, "64 MiB"),
        ((20 << 20) + 1, "20 MiB"),
        (int(36.3 * 2**20), "36.3 MiB"),
        (2 << 30, "2 GiB"),
        (5 << 40, "5 TiB"),
        (3 << 50, "3072 TiB"),
        (int(1023.97 * 1024), "1 MiB"),  # rounds up into the next unit, never "1024 KiB"
    ],
)
def test_sizes_read_the_same_everywhere(size: int, text: str) -> None:
    assert size_text(size) == text
