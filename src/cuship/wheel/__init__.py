"""Wheels and shared objects: ELF facts, CUDA fatbinaries, inspection, repair, retag, verify."""

from __future__ import annotations

from cuship.wheel.audit import ObjectReport, WheelReport, inspect_path
from cuship.wheel.cudalibs import CUDA_LIB_PATTERNS, is_cuda_lib
from cuship.wheel.fatbin import FatbinEntry, fatbin_of_elf, parse_fatbin

__all__ = [
    "CUDA_LIB_PATTERNS",
    "FatbinEntry",
    "ObjectReport",
    "WheelReport",
    "fatbin_of_elf",
    "inspect_path",
    "is_cuda_lib",
    "parse_fatbin",
]
