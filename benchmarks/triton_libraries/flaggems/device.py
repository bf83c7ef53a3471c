"""Device selection for FlagGems on a CPU, the only shim its checks need: FlagGems asks torch.cuda
which device it runs on, and torch's CPU build has no CUDA; here torch.cuda answers for one
device that is the CPU, so FlagGems imports and its kernels run in the Triton interpreter."""

from __future__ import annotations

import contextlib
import os
import types

import torch

os.environ.setdefault("GEMS_VENDOR", "nvidia")
_PROPERTIES = types.SimpleNamespace(
    name="cpu", major=9, minor=0, multi_processor_count=132, total_memory=64 << 30
)
for _name, _answer in {
    "device_count": lambda: 1,
    "current_device": lambda: 0,
    "set_device": lambda device: None,
    "synchronize": lambda device=None: None,
    "get_device_name": lambda device=None: "cpu",
    "get_device_properties": lambda device=None: _PROPERTIES,
    "get_device_capability": lambda device=None: (9, 0),
    "device": lambda device=None: contextlib.nullcontext(),
}.items():
    setattr(torch.cuda, _name, _answer)
