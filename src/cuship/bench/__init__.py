"""cuship bench: timing, statistics, gates, history with change points, and the static dashboard."""

from __future__ import annotations
