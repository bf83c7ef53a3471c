"""The one partial-fit rule: which of a package's own objects are main and which optional, and
which of the NVIDIA libraries they need are core (pure).

An own object is **optional** when it serves only some machines by design:

- its device code is all arch-specific (``sm_90a``, ``sm_100a`` and their PTX): it was built
  for one GPU generation (torchao's ``_C_cutlass_90a.so``, fbgemm's ``sm_100a`` kernels), and
  other GPUs never load it;
- it is a plugin without kernels of its own that another of the package's objects opens by
  name at run time (onnxruntime's ``libonnxruntime_providers_tensorrt.so``, which
  ``libonnxruntime.so`` opens only when TensorRT is asked for).

Every other own object is **main**; when every object with device code is arch-specific, those
are main (a package built for one generation only). The objects for another CUDA major or
release than the one that loads (``libbitsandbytes_cuda126.so`` beside ``…_cuda130.so``) are not
judged at all (:func:`cuship.judge.checks.alternatives`).

A main object that does not load, needs a CUDA the driver does not run, or has PTX this driver
cannot JIT fails the package; an optional one makes it a partial fit, named. A GPU fails the
package when no object has code for it; objects without code for it beside objects that run
are a partial fit, optional ones said to be optional (their kernels serve other GPUs). Among the NVIDIA libraries a missing one
of the CUDA runtime family (its SONAME names the CUDA major: libcudart, libcublas, libnvrtc)
fails every object that needs it; a missing one of the rest (cuTENSOR, NCCL, cuDNN opened at run
time) fails only the objects that need it, a partial fit where others load.
"""

from __future__ import annotations

from collections.abc import Sequence

from cuship.judge.needs import ObjectNeeds
from cuship.wheel.cudalibs import cuda_major_of

__all__ = ["core_library", "main_objects", "optional_reason"]


def _arch_specific(obj: ObjectNeeds) -> bool:
    code = (*obj.sass, *obj.ptx)
    return bool(code) and all(arch.endswith("a") for arch in code)


def optional_reason(obj: ObjectNeeds, own: Sequence[ObjectNeeds]) -> str | None:
    """Why ``obj`` (one of ``own``, the package's own objects) is optional; None: it is main."""
    if _arch_specific(obj):
        device = [o for o in own if o.device]
        if all(_arch_specific(o) for o in device):
            return None  # built for one generation only: those objects are the package
        arches = ", ".join(f"sm_{s}" for s in obj.sass) or ", ".join(
            f"compute_{p}" for p in obj.ptx
        )
        return f"built for one GPU generation only ({arches})"
    if not obj.device:
        base = obj.path.rsplit("/", 1)[-1]
        openers = [o.path for o in own if o is not obj and base in (o.opens or ())]
        if openers:
            return f"a plugin {openers[0].rsplit('/', 1)[-1]} opens at run time"
    return None


def main_objects(objects: Sequence[ObjectNeeds], own: Sequence[ObjectNeeds]) -> list[ObjectNeeds]:
    """Those of ``objects`` that are main."""
    return [o for o in objects if optional_reason(o, own) is None]


def core_library(soname: str) -> bool:
    """Whether ``soname`` is of the CUDA runtime family (its SONAME names the CUDA major)."""
    return cuda_major_of(soname) is not None
