"""Wheels and shared objects: ELF facts, CUDA fatbinaries, inspection, repair, retag, verify."""

from __future__ import annotations

from cuship.wheel._arch import ArchTarget, parse_arch_list
from cuship.wheel.audit import (
    ObjectReport,
    WheelReport,
    inspect_object,
    inspect_path,
    inspect_wheel,
)
from cuship.wheel.cudalibs import CUDA_LIB_PATTERNS, auditwheel_excludes, is_cuda_lib
from cuship.wheel.fatbin import FatbinEntry, fatbin_of_elf, parse_fatbin
from cuship.wheel.repair import RepairPlan, RepairResult, plan_repair, repair
from cuship.wheel.retag import RetagPlan, plan_retag, retag
from cuship.wheel.verify import VerifyResult, verify

__all__ = [
    "CUDA_LIB_PATTERNS",
    "ArchTarget",
    "FatbinEntry",
    "ObjectReport",
    "RepairPlan",
    "RepairResult",
    "RetagPlan",
    "VerifyResult",
    "WheelReport",
    "auditwheel_excludes",
    "fatbin_of_elf",
    "inspect_object",
    "inspect_path",
    "inspect_wheel",
    "is_cuda_lib",
    "parse_arch_list",
    "parse_fatbin",
    "plan_repair",
    "plan_retag",
    "repair",
    "retag",
    "verify",
]
