"""The FAQ: the errors users meet with CUDA wheels, each answered with what ``cuship doctor``
says about it and the fix it prints. The answers are not written by hand: each question is a
machine and a package as the judge sees them (:mod:`cuship.judge`), judged when the page is
made, so a change to a message or a fix changes the page."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from cuship.docs._md import code, text
from cuship.judge import Check, Context, ObjectNeeds, Offer, TorchBuild, WheelNeeds, judge
from cuship.machine.libraries import parse_override
from cuship.wheel.torchabi import TorchPin

__all__ = ["QUESTIONS", "Question", "answers", "render"]

_TAG = "cp312-cp312-manylinux_2_28_x86_64"
_CXX = "_ZN3c106detail14torchCheckFailEPKcS2_jPKc"
_CUDA_TORCH = ("libc10.so", "libc10_cuda.so", "libtorch_cuda.so")


def _machine(**changes: Any) -> Offer:
    """An H100 with a CUDA 13.0 driver, CUDA 13 torch 2.13.0 and CUDA 13 libraries, changed."""
    base = Offer(
        gpus=(("H100", "9.0"),),
        driver_version="580.65.06",
        driver_cuda="13.0",
        torch=TorchBuild(version="2.13.0", flavour="cuda", cuda="13.0", cxx11abi=True),
        libraries=parse_override("13"),
        glibc="2.35",
        gpu_source="example",
    )
    return replace(base, **changes)


def _ext(**fields: Any) -> ObjectNeeds:
    return replace(ObjectNeeds(path="pkg/_C.so", role="extension"), **fields)


@dataclass(frozen=True, slots=True, kw_only=True)
class Question:
    """What a user sees, and the package and machine that make it happen."""

    error: str
    situation: str
    package: WheelNeeds
    machine: Offer = field(default_factory=_machine)


def _package(*objects: ObjectNeeds, **fields: Any) -> WheelNeeds:
    return replace(WheelNeeds(name="pkg", version="1.0", objects=objects, tags=(_TAG,)), **fields)


QUESTIONS: tuple[Question, ...] = (
    Question(
        error="no kernel image is available for execution on the device",
        situation="a wheel with SASS for sm_80 and sm_90 and no PTX, on an RTX 5090",
        package=_package(_ext(sass=("80", "90"), libraries=("libcudart.so.13",))),
        machine=_machine(gpus=(("RTX 5090", "12.0"),)),
    ),
    Question(
        error="CUDA driver version is insufficient for CUDA runtime version",
        situation="a CUDA 13 wheel on a driver that runs CUDA 12.4",
        package=_package(_ext(sass=("90",), libraries=("libcudart.so.13",))),
        machine=_machine(driver_version="550.54.14", driver_cuda="12.4"),
    ),
    Question(
        error="libcudart.so.12: cannot open shared object file: No such file or directory",
        situation="a CUDA 12 wheel that neither bundles nor requires its runtime, where only "
        "CUDA 13 libraries are installed",
        package=_package(_ext(sass=("90",), libraries=("libcudart.so.12",))),
    ),
    Question(
        error=f"undefined symbol: {_CXX}",
        situation="an extension built on libtorch's C++ API for torch 2.8, beside torch 2.13",
        package=_package(
            _ext(
                sass=("90",),
                libraries=("libcudart.so.13",),
                torch_libraries=_CUDA_TORCH,
                torch_abi="exact",
                torch_symbol=_CXX,
            ),
            torch_requirement=TorchPin(requirement="torch==2.8.*", exact="2.8"),
            label_cuda="13.0",
            label_torch="2.8",
        ),
    ),
    Question(
        error="libc10_cuda.so: cannot open shared object file",
        situation="a CUDA extension of torch beside a CPU build of torch",
        package=_package(
            _ext(
                sass=("90",),
                libraries=("libcudart.so.13",),
                torch_libraries=_CUDA_TORCH,
                torch_abi="exact",
                torch_symbol=_CXX,
            ),
            torch_requirement=TorchPin(requirement="torch==2.13.*", exact="2.13"),
        ),
        machine=_machine(torch=TorchBuild(version="2.13.0+cpu", flavour="cpu", cxx11abi=True)),
    ),
    Question(
        error="libcublas.so.12: cannot open shared object file (at its first use on the GPU)",
        situation="a package that links no CUDA library and opens cuBLAS 12 itself with dlopen "
        "(ctranslate2 4.8.5), where only CUDA 13 libraries are installed",
        package=_package(
            _ext(
                sass=("80", "86"),
                ptx=("86",),
                ptx_isa=("8.7",),
                static_runtime=True,
                opens=("libcublas.so.12", "libcuda.so.1"),
            ),
        ),
        machine=_machine(gpus=(("A100", "8.0"),)),
    ),
    Question(
        error="the provided PTX was compiled with an unsupported toolchain",
        situation="a wheel whose only device code is PTX of ISA 8.5 (CUDA 12.6), on an A100 with "
        "driver 535 (CUDA 12.2)",
        package=_package(_ext(ptx=("52",), ptx_isa=("8.5",), libraries=("libcudart.so.12",))),
        machine=_machine(
            gpus=(("A100", "8.0"),),
            driver_version="535.104.05",
            driver_cuda="12.2",
            torch=None,
            libraries=parse_override("12"),
        ),
    ),
    Question(
        error="version `GLIBC_2.34' not found",
        situation="a wheel tagged manylinux_2_34 on a system with glibc 2.31",
        package=_package(
            _ext(sass=("90",), libraries=("libcudart.so.13",)),
            tags=("cp312-cp312-manylinux_2_34_x86_64",),
        ),
        machine=_machine(glibc="2.31"),
    ),
)


def answers(question: Question) -> tuple[Check, ...]:
    """The problems ``cuship doctor`` reports for the question's package on its machine."""
    verdict = judge(question.package, question.machine, context=Context(installing=False))
    return verdict.failures


def _entry(question: Question) -> str:
    lines = [
        f"## {text(question.error)}\n",
        f"Seen with {text(question.situation)}. `cuship doctor` names it:\n",
    ]
    for problem in answers(question):
        lines.append(f"- **{problem.area}**: {text(problem.message)}")
        lines.append(f"    - fix: {code(problem.fix)}")
    return "\n".join(lines) + "\n"


def render() -> str:
    """The page: one question per error."""
    head = [
        "# FAQ: why won't it run?\n",
        "The errors a CUDA package meets at import or at its first kernel, and what "
        "`cuship doctor` says about each: the problem, in the words of the error the user saw, "
        "and the command that fixes it. Generated when the site is built by judging each "
        "situation below with the judge doctor, resolve, install, the backend, gpu-run and "
        "verify all ask (`src/cuship/judge/`), on an example machine (an H100, a driver of "
        "CUDA 13.0, torch 2.13.0 built for CUDA 13.0, glibc 2.35) changed as each situation "
        "says. Run `cuship doctor` (or `cuship doctor PACKAGE --json`) on the machine where "
        "the error happens; [GPU runs](../gpu-ci.md) and "
        "[Will it run here?](../judge.md) say more.\n",
    ]
    return "\n".join(head + [_entry(q) for q in QUESTIONS])
