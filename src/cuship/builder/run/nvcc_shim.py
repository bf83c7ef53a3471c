"""The nvcc a build sees: it replaces the GPU architecture flags of every device compile with the
configured ones, then runs the real nvcc.

Projects such as causal-conv1d and flash-attention append their own ``-gencode`` flags in
setup.py; torch's cpp_extension then leaves ``TORCH_CUDA_ARCH_LIST`` unused, and a job configured
for one arch compiles nine. cuship points ``CUDA_HOME`` (and ``CUDACXX``, ``PYTORCH_NVCC``) at a
shadow toolkit whose ``bin/nvcc`` is this script; everything else in it links to the real
toolkit. Modes:

- ``rewrite``: drop every ``-gencode``/``-arch``/``-code`` (any spelling) and pass the
  configured ``-gencode`` flags instead; a device compile with no arch flags gets them too;
- ``stop``: a compile whose arch flags differ from the configured ones fails, naming both.

Calls that compile no device code (``nvcc --version``, a host-only ``.cpp``) pass through. Every
call is appended to a JSON-lines log (what it asked for, what it compiled), which the build reads
back to record the archs actually compiled.

Run as a file with the standard library only (``python -I -S nvcc_shim.py``): it is started once
per compile, inside whatever environment the project's build has.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["ArchFlags", "expand_options_files", "make_shadow", "parse_arch_flags", "plan_call"]

_GENCODE = ("-gencode", "--generate-code")
_ARCH = ("-arch", "--gpu-architecture")
_CODE = ("-code", "--gpu-code")
# nvcc options whose value may be the next argument: that argument is the option's (ptxas's
# ``-arch=sm_90`` after ``-Xptxas``, a macro after ``-D``), never a flag of nvcc's own.
_WITH_VALUE = frozenset(
    [
        "-Xptxas",
        "--ptxas-options",
        "-Xcompiler",
        "--compiler-options",
        "-Xlinker",
        "--linker-options",
        "-Xnvlink",
        "--nvlink-options",
        "-Xarchive",
        "--archive-options",
        "-Xfatbin",
        "--fatbin-options",
        "-Xcudafe",
        "-ccbin",
        "--compiler-bindir",
        "-o",
        "--output-file",
        "-odir",
        "--output-directory",
        "-I",
        "--include-path",
        "-D",
        "--define-macro",
        "-U",
        "--undefine-macro",
        "-L",
        "--library-path",
        "-l",
        "--library",
        "-isystem",
        "--system-include",
        "-include",
        "--pre-include",
        "-MF",
        "--dependency-output",
        "-MT",
        "--dependency-target-name",
        "-x",
        "--x",
        "-std",
        "--std",
        "-maxrregcount",
        "--maxrregcount",
        "-t",
        "--threads",
        "-rdc",
        "--relocatable-device-code",
        "-ftz",
        "--ftz",
        "-prec-div",
        "--prec-div",
        "-prec-sqrt",
        "--prec-sqrt",
        "-fmad",
        "--fmad",
        "-diag-suppress",
        "--diag-suppress",
        "-diag-error",
        "--diag-error",
        "-diag-warn",
        "--diag-warn",
        "--options-file",
        "-optf",
        "-split-compile",
        "--split-compile",
        "-Werror",
        "--Werror",
    ]
)
_DEVICE_SOURCES = (".cu", ".ptx", ".fatbin", ".cubin")
_DEVICE_LINK = ("-dlink", "--device-link", "-dc", "--device-c", "-rdc=true", "-fatbin", "-cubin")


class ArchFlags:
    """The arch flags of one nvcc command line: their positions and the targets they name."""

    def __init__(self) -> None:
        self.spans: list[tuple[int, int]] = []  # [start, end) of each flag with its value
        self.targets: list[str] = []  # "sm_90", "compute_90", "native", "all"
        self._arch: list[str] = []
        self._code: list[str] = []

    def finish(self) -> ArchFlags:
        """Resolve ``-arch``/``-code`` into targets as nvcc does: ``-arch=sm_90`` alone is
        SASS for sm_90 and PTX for compute_90; with ``-code`` it is the codes listed."""
        if self._code:
            self.targets += self._code
        else:
            for arch in self._arch:
                if arch.startswith("sm_"):
                    self.targets += [arch, "compute_" + arch[3:]]
                else:
                    self.targets.append(arch)
        self.targets = list(dict.fromkeys(self.targets))
        return self


def _codes(value: str) -> list[str]:
    return [c for c in value.replace("[", ",").replace("]", ",").replace('"', ",").split(",") if c]


def _gencode_targets(value: str) -> list[str]:
    """``arch=compute_90,code=[sm_90,compute_90]`` → ``["sm_90", "compute_90"]``."""
    head, _, code = value.partition("code=")
    if not code:  # "arch=compute_90" alone: PTX for it
        return [part.removeprefix("arch=") for part in _codes(head)]
    return _codes(code)


def parse_arch_flags(argv: Sequence[str]) -> ArchFlags:
    """Find every arch flag in ``argv`` (the arguments after ``nvcc``)."""
    found = ArchFlags()
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in _WITH_VALUE:  # the next argument is this option's value
            i += 2
            continue
        name, eq, inline = arg.partition("=")
        kinds = (_GENCODE, _ARCH, _CODE)
        kind = next((k for k in kinds if name in k), None)
        if kind is None:
            i += 1
            continue
        if eq:
            value, end = inline, i + 1
        else:
            value, end = (argv[i + 1] if i + 1 < len(argv) else ""), i + 2
        found.spans.append((i, min(end, len(argv))))
        if kind is _GENCODE:
            found.targets += _gencode_targets(value)
        elif kind is _ARCH:
            found._arch += _codes(value)
        else:
            found._code += _codes(value)
        i = end
    return found.finish()


_OPTIONS_FILE = ("--options-file", "-optf")
_MAX_OPTIONS_FILE = 1 << 20


def expand_options_files(argv: Sequence[str], read: Callable[[str], str]) -> list[str]:
    """``argv`` with each ``--options-file F`` (``-optf``, ``=F``, comma-separated files)
    replaced by the options ``F`` holds, as nvcc reads them: arch flags in an options file are
    arch flags like any other (``stop`` must see them, ``rewrite`` must drop them). ``read``
    gives a file's text; one level is expanded, as nvcc's own files cannot nest."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        name, eq, inline = argv[i].partition("=")
        if name not in _OPTIONS_FILE:
            out.append(argv[i])
            i += 1
            continue
        value = inline if eq else (argv[i + 1] if i + 1 < len(argv) else "")
        for file in (f for f in value.split(",") if f):
            out += shlex.split(read(file))
        i += 1 if eq else 2
    return out


def _read_options_file(path: str) -> str:
    """An options file's text: a regular file (opened without blocking, so a FIFO is refused),
    at most 1 MiB, UTF-8; a ValueError saying why otherwise. This script runs with the standard
    library alone, so it holds the file to cuship's reader's rules itself."""
    import stat

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"the options file {path!r} is not a regular file")
        data = os.read(fd, _MAX_OPTIONS_FILE + 1)
    finally:
        os.close(fd)
    if len(data) > _MAX_OPTIONS_FILE:
        raise ValueError(f"the options file {path!r} is larger than 1 MiB")
    return data.decode("utf-8")


def _compiles_device_code(argv: Sequence[str]) -> bool:
    return any(a.endswith(_DEVICE_SOURCES) or a in _DEVICE_LINK for a in argv)


def _targets_of(gencode: Sequence[str]) -> list[str]:
    return parse_arch_flags(list(gencode)).targets


def plan_call(
    argv: Sequence[str], gencode: Sequence[str], mode: str
) -> tuple[list[str] | None, dict[str, object]]:
    """(the arguments to run the real nvcc with, or None to refuse; the log record)."""
    found = parse_arch_flags(argv)
    wanted = _targets_of(gencode)
    record: dict[str, object] = {"asked": found.targets, "compiled": [], "action": "passthrough"}
    if not found.spans and not _compiles_device_code(argv):
        return list(argv), record
    if mode == "stop" and found.spans and sorted(found.targets) != sorted(wanted):
        flags = [" ".join(argv[s:e]) for s, e in found.spans]
        record.update(action="refused", flags=flags)
        return None, record
    dropped = {i for start, end in found.spans for i in range(start, end)}
    kept = [a for i, a in enumerate(argv) if i not in dropped]
    action = "kept" if sorted(found.targets) == sorted(wanted) else "rewrote"
    record.update(action=action if found.spans else "added", compiled=wanted)
    return [*gencode, *kept], record


def _log(path: Path, record: dict[str, object]) -> None:
    line = (json.dumps(record, sort_keys=True) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def _say(text: str, *, error: bool = False) -> None:
    (sys.stderr if error else sys.stdout).write(f"cuship nvcc: {text}\n")


def _run(args: list[str]) -> int:
    """``run --real NVCC --mode M --log PATH --gencode 'FLAGS' -- NVCC-ARGS...``"""
    split = args.index("--")
    opts = dict(zip(args[:split:2], args[1:split:2], strict=True))
    try:
        argv = expand_options_files(args[split + 1 :], _read_options_file)
    except (OSError, ValueError) as err:
        _say(f"error: {err}", error=True)
        return 2
    gencode = shlex.split(opts["--gencode"])
    new, record = plan_call(argv, gencode, opts["--mode"])
    _log(Path(opts["--log"]), record)
    if new is None:
        asked = ", ".join(str(t) for t in record["asked"])  # type: ignore[attr-defined]
        flags = "; ".join(str(f) for f in record["flags"])  # type: ignore[attr-defined]
        _say(
            f"error: this compile asks for {asked} ({flags}) but [matrix] arch builds "
            f"{' '.join(gencode)}. Fix: remove the project's own arch flags, or set "
            "[build] arch_flags = 'rewrite' and cuship replaces them",
            error=True,
        )
        return 2
    real = opts["--real"]
    os.execv(real, [real, *new])  # replaces this process


def make_shadow(
    *, cuda_home: Path, into: Path, python: str, mode: str, log: Path, gencode: Sequence[str]
) -> Path:
    """A toolkit at ``into`` that is ``cuda_home`` but for ``bin/nvcc``, which runs this script
    by ``python``. Every other entry is a symlink into the real toolkit. The nvcc path."""
    (into / "bin").mkdir(parents=True, exist_ok=True)
    for sub in ("", "bin"):
        for entry in sorted((cuda_home / sub).iterdir()):
            link = into / sub / entry.name
            mine = (entry.name == "bin" and not sub) or (sub and entry.name == "nvcc")
            if not mine and not link.is_symlink() and not link.exists():
                link.symlink_to(entry)
    real = (cuda_home / "bin" / "nvcc").resolve()
    here = Path(__file__).resolve()
    script = (
        "#!/bin/sh\n"
        "# cuship: the configured GPU architectures for every device compile (nvcc_shim.py)\n"
        f"exec {shlex.quote(python)} -I -S {shlex.quote(str(here))} run "
        f"--real {shlex.quote(str(real))} --mode {shlex.quote(mode)} "
        f'--log {shlex.quote(str(log))} --gencode {shlex.quote(" ".join(gencode))} -- "$@"\n'
    )
    nvcc = into / "bin" / "nvcc"
    tmp = nvcc.with_name("nvcc.tmp")
    tmp.write_text(script, encoding="utf-8")
    tmp.chmod(0o755)
    tmp.replace(nvcc)
    return nvcc


def _make(args: list[str]) -> int:
    """``make --cuda-home DIR --into DIR --mode M --log PATH --gencode 'FLAGS'``"""
    opts = dict(zip(args[::2], args[1::2], strict=True))
    home = Path(opts["--cuda-home"])
    if not os.access(home / "bin" / "nvcc", os.X_OK):
        _say(f"error: no nvcc at {str(home / 'bin' / 'nvcc')!r}", error=True)
        return 2
    nvcc = make_shadow(
        cuda_home=home,
        into=Path(opts["--into"]),
        python=sys.executable,
        mode=opts["--mode"],
        log=Path(opts["--log"]),
        gencode=shlex.split(opts["--gencode"]),
    )
    _say(f"{nvcc} runs {(home / 'bin' / 'nvcc').resolve()} ({opts['--mode']} arch flags)")
    return 0


if __name__ == "__main__":
    command, rest = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("", [])
    if command not in ("run", "make"):
        _say("usage: nvcc_shim.py make|run ...", error=True)
        sys.exit(2)
    sys.exit(_run(rest) if command == "run" else _make(rest))
