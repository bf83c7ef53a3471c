"""``cuship serve``: a bounded loopback HTTP server for a written index, with PEP 691 content
negotiation. It reads the site's files; it imports nothing of :mod:`cuship.index`."""

from __future__ import annotations

from cuship.serve.site import IndexServer, RequestLog, ServeLimits, serve

__all__ = ["IndexServer", "RequestLog", "ServeLimits", "serve"]
