"""``cuship serve``: a bounded loopback HTTP server for a written index, with PEP 691 content
negotiation. It reads the site's files; it imports nothing of :mod:`cuship.index`."""

from __future__ import annotations

from cuship.serve.descriptors import descriptors_wanted, more_descriptors
from cuship.serve.site import IndexServer, RequestLog, ServeLimits, serve, site_labels

__all__ = [
    "IndexServer",
    "RequestLog",
    "ServeLimits",
    "descriptors_wanted",
    "more_descriptors",
    "serve",
    "site_labels",
]
