"""Wheels and shared objects: local version labels, ELF facts, CUDA fatbinaries, inspection,
repair, retag, verify. Import the submodules; this package imports nothing so start-up stays light."""
