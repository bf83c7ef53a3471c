"""Wheels: local version labels, ELF and fatbin inspection, repair, retagging."""
