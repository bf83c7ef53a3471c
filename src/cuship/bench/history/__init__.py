"""Stored bench runs over time: one series per machine and result, its step changes, and the
static dashboard that draws them."""
