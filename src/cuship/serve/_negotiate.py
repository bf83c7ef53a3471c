"""PEP 691 content negotiation: pick the representation of a simple page an Accept header wants."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["HTML", "JSON", "LEGACY_HTML", "OFFERED", "choose"]

JSON = "application/vnd.pypi.simple.v1+json"
HTML = "application/vnd.pypi.simple.v1+html"
LEGACY_HTML = "text/html"
OFFERED: tuple[str, ...] = (JSON, HTML, LEGACY_HTML)
_ALIASES = {
    "application/vnd.pypi.simple.latest+json": JSON,
    "application/vnd.pypi.simple.latest+html": HTML,
}


def _parse(header: str) -> list[tuple[str, float]]:
    ranges: list[tuple[str, float]] = []
    for part in header.split(","):
        media, *params = (p.strip() for p in part.split(";"))
        if not media:
            continue
        quality = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = min(max(float(value), 0.0), 1.0)
                except ValueError:
                    quality = 0.0
        ranges.append((_ALIASES.get(media.lower(), media.lower()), quality))
    return ranges


def _match(offered: str, ranges: Sequence[tuple[str, float]]) -> tuple[float, int]:
    """(quality, specificity) of the most specific range matching ``offered``; (0, -1) if none."""
    kind = offered.split("/")[0]
    best = (0.0, -1)
    for media, quality in ranges:
        if media == offered:
            specificity = 2
        elif media == f"{kind}/*":
            specificity = 1
        elif media == "*/*":
            specificity = 0
        else:
            continue
        if specificity > best[1]:
            best = (quality, specificity)
    return best


def choose(accept: str | None, offered: Sequence[str] = OFFERED) -> str | None:
    """The media type to answer with, or None when nothing offered is acceptable (406).

    No header means text/html. The highest q-value wins; among equals a type the client named
    exactly beats a wildcard match, JSON is preferred when named, and plain wildcards get
    text/html (what a browser or curl can show).
    """
    if accept is None or not accept.strip():
        return LEGACY_HTML if LEGACY_HTML in offered else offered[0]
    ranges = _parse(accept)
    scored = []
    for rank, media in enumerate(offered):
        quality, specificity = _match(media, ranges)
        if quality <= 0.0:
            continue
        tie = rank if specificity > 0 else len(offered) - rank
        scored.append((quality, specificity, -tie, media))
    if not scored:
        return None
    return max(scored)[3]
