"""The JSON Schema of ``cuship gpu-run --json`` (:meth:`GpuRunReport.to_json
<cuship.gpurun.results.GpuRunReport.to_json>`, also written to ``gpu-run.json``)."""

from __future__ import annotations

from cuship.docs.documents._parts import Schema, array, closed, enum, maybe, of
from cuship.gpurun.results import PRECEDENCE, VERDICTS

__all__ = ["DOCUMENTS", "gpu_run_schema"]

_STRINGS = {"type": "string"}


def _gpu_run_machine() -> Schema:
    gpu = closed(
        "One GPU.",
        {
            "name": of("string", "Its name (`NVIDIA H100 80GB HBM3`)."),
            "cc": maybe(of("string", ""), "Its compute capability (`9.0`), if known."),
            "memory_gib": maybe(of("number", ""), "Its memory in GiB, if known."),
            "uuid": maybe(of("string", ""), "Its UUID, if known."),
        },
    )
    version = maybe(of("string", ""), "")
    return closed(
        "The machine the run found.",
        {
            "gpus": array("Its GPUs.", gpu),
            "gpu_source": of("string", "Where the GPUs were found (`override`: CUSHIP_GPUS)."),
            "gpu_faked": of("boolean", "The GPUs were faked (CUSHIP_GPUS): a dry run."),
            "driver_version": {**version, "description": "The NVIDIA driver's version."},
            "driver_cuda": {**version, "description": "The CUDA version the driver supports."},
            "toolkit": {**version, "description": "The CUDA toolkit's version, if one is here."},
            "torch": {**version, "description": "The torch version cuship's interpreter sees."},
            "python": of("string", "The Python version of the interpreter the wheel is for."),
        },
    )


def _target() -> Schema:
    gpu = closed(
        "A GPU the wheel must run on.",
        {"name": of("string", "Its name."), "cc": of("string", "Its compute capability.")},
    )
    libraries = closed(
        "The NVIDIA libraries found here.",
        {
            "source": of("string", "How they were found (`searched`, `CUSHIP_CUDA_LIBS`)."),
            "found": of(
                "object", "Each library (a SONAME) and where it is.", additionalProperties=_STRINGS
            ),
        },
    )
    text = maybe(of("string", ""), "")
    return closed(
        "The machine the wheel was chosen for, as the resolver saw it.",
        {
            "python": of("string", "The Python version."),
            "tags": array("Its first wheel tags, most specific first."),
            "tag_count": of("integer", "How many wheel tags it supports.", minimum=0),
            "gpus": array("Its GPUs.", gpu),
            "driver_version": {**text, "description": "The driver version."},
            "driver_cuda": {**text, "description": "The CUDA version the driver supports."},
            "torch": {**text, "description": "The torch version installed, if any."},
            "cxx11abi": maybe(of("boolean", ""), "That torch's C++11 ABI, if known."),
            "torch_flavour": {**text, "description": "`cpu`, `cuda`, `rocm` or `xpu`, if known."},
            "torch_cuda": {**text, "description": "The CUDA that torch was built for."},
            "libraries": maybe(libraries, "The NVIDIA libraries here; null: not looked for."),
            "glibc": {**text, "description": "The glibc version, if known."},
        },
    )


def _wheel_choice() -> Schema:
    passed_over = closed(
        "A wheel given but not chosen because it does not fit.",
        {
            "filename": of("string", "Its file name."),
            "rule": of("string", "The rule it failed (`unreadable`: it could not be read)."),
            "reason": of("string", "Why."),
        },
    )
    return closed(
        "The wheel chosen for this machine, and how every given file was judged.",
        {
            "path": of("string", "The wheel's path."),
            "filename": of("string", "Its file name."),
            "sha256": maybe(of("string", ""), "Its sha256, if known."),
            "version": maybe(of("string", ""), "Its version."),
            "why": of("string", "Why it was chosen, in one line."),
            "cuda": maybe(of("string", ""), "The CUDA it was built for, if any."),
            "coverage": of("string", "What device code runs here (`sass`, `ptx`, `cpu`)."),
            "notes": array("What else the resolver said of it."),
            "target": _target(),
            "also_fitting": array("The other wheels that fit, best first."),
            "rejected": array("The wheels that do not fit, and why.", passed_over),
        },
    )


def _install_step() -> Schema:
    text = maybe(of("string", ""), "")
    return closed(
        "The install step: where the wheel went, and what the installed copy looks like.",
        {
            "mode": enum(("venv", "in-place"), "Into a venv, or the interpreter itself."),
            "python": of("string", "The interpreter installed into."),
            "venv": {**text, "description": "The venv's directory; null: in place."},
            "wheel": of("string", "The wheel installed."),
            "wheel_sha256": of("string", "Its sha256."),
            "location": {**text, "description": "Where the distribution was installed."},
            "version": {**text, "description": "The installed distribution's version."},
            "origins": of(
                "object",
                "Each top-level module and the file `import` finds (null: not found).",
                additionalProperties={"type": ["string", "null"]},
            ),
            "missing_requirements": array("Its requirements that are not installed."),
            "commands": array("The commands run.", {"type": "array", "items": _STRINGS}),
            "log": maybe(of("string", ""), "Its log, relative to the results directory."),
            "exit_code": of("integer", "Its exit code (cuship's codes)."),
            "verdict": of("string", "Its verdict (`passed`, `failed`)."),
            "reason": {**text, "description": "Why it failed; null when it passed."},
            "duration_s": of("number", "Seconds it took.", minimum=0),
        },
    )


def _stage() -> Schema:
    verdicts = [*VERDICTS.values(), "skipped", "not-run"]
    return closed(
        "One stage, as it ran or why it did not.",
        {
            "name": of("string", "The stage (`pytest`, `check`, `sanitize`, `bench`)."),
            "command": array("Its command line."),
            "env": of(
                "object",
                "The variables set for it beyond the run's.",
                additionalProperties=_STRINGS,
            ),
            "cwd": of("string", "The directory it ran in."),
            "exit_code": maybe(of("integer", ""), "Its exit code as cuship's; null: not run."),
            "raw_exit_code": maybe(of("integer", ""), "Its command's own exit status."),
            "duration_s": of("number", "Seconds it took.", minimum=0),
            "log": maybe(of("string", ""), "Its log, relative to the results directory."),
            "verdict": enum(verdicts, "Its verdict."),
            "reason": maybe(of("string", ""), "Why it was skipped or did not run."),
            "outputs": array("The reports it wrote, relative to the results directory."),
            "notes": array("What else it is worth knowing about it."),
        },
    )


def gpu_run_schema() -> Schema:
    """``cuship gpu-run --json``: the machine, the wheel, the install step and each stage."""
    return closed(
        "What `cuship gpu-run --json` prints (and writes to `gpu-run.json`): the machine, the "
        "wheel chosen for it, the install step and every stage, with the run's exit code.",
        {
            "cuship": of("string", "The cuship version that ran."),
            "project": closed(
                "The project.",
                {"path": of("string", "Its directory."), "name": of("string", "Its name.")},
            ),
            "exit_code": of(
                "integer", "The exit code: the most serious stage's.", enum=[*PRECEDENCE]
            ),
            "verdict": enum(VERDICTS.values(), "The exit code in words."),
            "precedence": array(
                "The exit codes, most serious first.", {"type": "integer", "enum": [*PRECEDENCE]}
            ),
            "started": of("string", "When it started (ISO 8601, UTC)."),
            "duration_s": of("number", "Seconds it took.", minimum=0),
            "machine": _gpu_run_machine(),
            "wheel": _wheel_choice(),
            "install": _install_step(),
            "stages": array("Every stage, in the order run.", _stage()),
            "notes": array("What else it is worth knowing (a faked GPU)."),
        },
    )


DOCUMENTS = {"gpu-run": ("cuship gpu-run --json", gpu_run_schema)}
