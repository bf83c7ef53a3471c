"""A pytest plugin that runs FlagGems' own tests on the CPU (``-p cpu_tests``): the interpreter
under cuship's adaptation for the whole session, the checks' device selection, and tensors made
on the CPU (the tests make them on ``flag_gems.device``)."""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"
from cuship.check.interpret.adapt import adapted

ADAPTATION = adapted()  # kept: the adaptation lasts the session
ADAPTATION.__enter__()
import device  # noqa: E402, F401
import flag_gems  # noqa: E402

flag_gems.device = "cpu"
