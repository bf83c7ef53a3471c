"""PEP 691 content negotiation as a pure function."""

from __future__ import annotations

import pytest

from cuship.serve._negotiate import HTML, JSON, LEGACY_HTML, choose

PIP_ACCEPT = (
    "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, "
    "text/html; q=0.01"
)


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, LEGACY_HTML),
        ("", LEGACY_HTML),
        (PIP_ACCEPT, JSON),
        ("text/html", LEGACY_HTML),
        ("application/vnd.pypi.simple.v1+html", HTML),
        ("application/vnd.pypi.simple.latest+json", JSON),
        ("application/vnd.pypi.simple.v1+json;q=0.2, text/html;q=0.9", LEGACY_HTML),
        ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", LEGACY_HTML),
        ("*/*", LEGACY_HTML),
        ("application/*", JSON),
        ("application/vnd.pypi.simple.v1+json;q=0, */*", LEGACY_HTML),
        ("application/json", None),
        ("text/html;q=0", None),
        ("image/png, text/plain", None),
    ],
)
def test_choose(accept: str | None, expected: str | None) -> None:
    assert choose(accept) == expected
