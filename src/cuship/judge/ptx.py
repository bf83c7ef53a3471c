"""Which GPUs a shared object's PTX can serve (pure).

PTX (``compute_XY``) is compiled by the driver at first launch (JIT) on a GPU that has no SASS
for it, or on every GPU under ``CUDA_FORCE_PTX_JIT=1``. The rules are the resolver's
(:func:`cuship.judge.gpu.covers`): plain PTX runs on any GPU of compute capability X.Y or
higher; arch-specific PTX (``compute_90a``) only on X.Y itself; family-specific PTX
(``compute_100f``) on GPUs of major X from minor Y up. The driver must also support the CUDA
toolkit that wrote the PTX (a driver older than that toolkit refuses it with
``CUDA_ERROR_UNSUPPORTED_PTX_VERSION``): a fact about the driver, not the GPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from cuship._record import frozen
from cuship.arch import cc_tuple, sm_key
from cuship.judge.gpu import covers

__all__ = ["PtxReach", "jit_arch", "reach", "reach_lines"]

Rule = Literal["forward", "exact", "family"]
_RULES: dict[str, Rule] = {"": "forward", "a": "exact", "f": "family"}
_DRIVER = "the driver must support the CUDA toolkit that made it"


@frozen
class PtxReach:
    """One PTX arch and the GPUs that can JIT it."""

    sm: str  # "80", "90a", "100f"
    rule: Rule

    @property
    def cc(self) -> str:
        number = int(self.sm.rstrip("af"))
        return f"{number // 10}.{number % 10}"

    @property
    def serves(self) -> str:
        """``any GPU of compute capability >= 8.0`` and the like."""
        if self.rule == "exact":
            return f"only GPUs of compute capability {self.cc} (arch-specific PTX)"
        if self.rule == "family":
            major = self.cc.partition(".")[0]
            return f"GPUs of compute capability {major}.x >= {self.cc} (family-specific PTX)"
        return f"any GPU of compute capability >= {self.cc}"

    def runs_on(self, cc: str) -> bool:
        """Whether a GPU of compute capability ``cc`` can JIT this PTX."""
        return covers(self.sm, cc_tuple(cc), ptx=True)

    def line(self) -> str:
        """``PTX compute_80: JIT on any GPU of compute capability >= 8.0 (the driver …)``."""
        return f"PTX compute_{self.sm}: JIT on {self.serves} ({_DRIVER})"

    def to_json(self) -> dict[str, Any]:
        return {
            "arch": f"compute_{self.sm}",
            "rule": self.rule,
            "cc": self.cc,
            "serves": self.serves,
        }


def reach(sm: str) -> PtxReach:
    """The reach of PTX for ``sm`` (``"80"``, ``"compute_90a"``)."""
    bare = sm.removeprefix("compute_")
    suffix = bare[-1] if bare[-1:] in ("a", "f") else ""
    return PtxReach(sm=bare, rule=_RULES[suffix])


def reach_lines(ptx: Sequence[str]) -> tuple[str, ...]:
    """One line per PTX arch, oldest first; with none, the line that says so."""
    if not ptx:
        return ("no PTX: runs only on GPUs its SASS covers; no GPU can JIT it",)
    return tuple(reach(sm).line() for sm in sorted(set(ptx), key=sm_key))


def jit_arch(cc: str, ptx: Sequence[str]) -> str | None:
    """The PTX a GPU of compute capability ``cc`` JIT-compiles: the newest it can, else None."""
    usable = [sm for sm in ptx if reach(sm).runs_on(cc)]
    return max(usable, key=sm_key) if usable else None
