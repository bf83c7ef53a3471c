"""A pytest plugin that runs flash-linear-attention's own tests on the CPU (``-p cpu_tests``): the
interpreter under cuship's adaptation for the whole session, and device selection (tensors made
on the CPU; the tests' conftest synchronizes ``torch.cuda``)."""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"
from cuship.check.interpret.adapt import adapted

ADAPTATION = adapted()  # kept: the adaptation lasts the session
ADAPTATION.__enter__()
import fla.utils  # noqa: E402
import torch  # noqa: E402

fla.utils.device = "cpu"
torch.cuda.synchronize = lambda device=None: None
