"""What a project's own build script does that cuship must steer, read from its text (bounded,
never run): the ``*_FORCE_BUILD`` switches that skip a prebuilt download (flash-attention,
causal-conv1d, mamba), the switches that open its CUDA gate on a machine without a GPU
(``FORCE_CUDA``: ``data/build_switches.toml``), whether it is a torch extension, the GPU
architecture flags it hard-codes, and, for a setup.py project with no ``[project]`` table, its
name and version where they are written plainly."""

from __future__ import annotations

import fnmatch
import functools
import re
from pathlib import Path

from packaging.utils import InvalidName, canonicalize_name
from packaging.version import InvalidVersion, Version

from cuship import _read, schema
from cuship._record import frozen
from cuship.arch import names_arch_flag
from cuship.errors import ConfigError
from cuship.schema import field_doc

__all__ = [
    "FORCE_SWITCH",
    "BuildScript",
    "BuildSwitchesFile",
    "Gate",
    "gate_env",
    "gates",
    "read_build_script",
    "read_text",
]

SWITCHES_FILE = Path(__file__).parent.parent / "data" / "build_switches.toml"

FORCE_SWITCH = re.compile(r"""["']([A-Z][A-Z0-9_]*_FORCE_BUILD)["']""")
_PACKAGE_NAME = re.compile(r"""^PACKAGE_NAME\s*=\s*["']([A-Za-z0-9][A-Za-z0-9._-]*)["']""", re.M)
_SETUP_NAME = re.compile(r"""\bname\s*=\s*["']([A-Za-z0-9][A-Za-z0-9._-]*)["']""")
_VERSION = re.compile(r"""^__version__\s*=\s*["']([^"'\n]{1,64})["']""", re.M)
_LIMIT = 1 << 20
_ENV_READ = re.compile(
    r"""(?:getenv|environ\.get|environ\.setdefault|environ\[)\s*\(?\s*["']([A-Z][A-Z0-9_]{2,63})["']"""
)
_TORCH_EXTENSION = re.compile(r"\b(?:cpp_extension|CUDAExtension|BuildExtension)\b")
_CUDA_GATE = re.compile(r"\bcuda\.is_available\(|\bcuda\._is_compiled\(")


@frozen
class Gate:
    """A switch that opens a torch extension's CUDA gate (``FORCE_CUDA=1``)."""

    name: str | None = field_doc("The variable: FORCE_CUDA.", default=None)
    pattern: str | None = field_doc(
        "Or a glob of variable names (*_FORCE_CUDA), matched against the names setup.py writes.",
        default=None,
    )
    value: str = field_doc("What cuship sets it to.")
    always: bool = field_doc(
        "Set for every CUDA job of a torch extension, whether setup.py names it or not.",
        default=False,
    )
    source: str = field_doc("Where this spelling was read.")

    def matches(self, name: str) -> bool:
        return name == self.name or (
            self.pattern is not None and fnmatch.fnmatchcase(name, self.pattern)
        )


@frozen
class BuildSwitchesFile:
    """build_switches.toml: the switches that open a torch extension's CUDA gate."""

    gate: tuple[Gate, ...] = field_doc("One table per switch.", non_empty=True)


@functools.cache
def gates() -> tuple[Gate, ...]:
    """The rows of ``data/build_switches.toml``; each names one variable or one pattern."""
    raw = schema.read_toml(SWITCHES_FILE)
    rows = schema.load(BuildSwitchesFile, raw, source=str(SWITCHES_FILE), strict=True).gate
    for i, row in enumerate(rows):
        if (row.name is None) == (row.pattern is None):
            raise ConfigError(
                str(SWITCHES_FILE),
                f"gate[{i}]",
                "names neither or both of name and pattern",
                hint="give each row a name or a pattern",
            )
    return rows


def read_text(path: Path, limit: int = _LIMIT) -> str:
    """The first ``limit`` bytes of ``path`` as text; empty when it cannot be read."""
    try:
        return _read.read_head(path, _read.SOURCE, limit).decode("utf-8", "replace")
    except (OSError, _read.Refused):
        return ""


@frozen
class BuildScript:
    """What setup.py (or CMakeLists.txt) says, as far as reading it tells."""

    file: str | None = None  # "setup.py"
    force_switches: tuple[str, ...] = ()
    gates: tuple[str, ...] = ()  # the gate switches it names (FORCE_CUDA)
    torch_extension: bool = False  # it builds with torch's cpp_extension
    cuda_gate: bool = False  # it asks torch.cuda.is_available() (a GPU at build time)
    arch_flags: tuple[str, ...] = ()  # the lines that hard-code arch flags (first few)
    name: str | None = None
    version: str | None = None


def _arch_lines(text: str) -> tuple[str, ...]:
    lines = [
        line.strip()
        for line in text.splitlines()
        if names_arch_flag(line) and not line.strip().startswith("#")
    ]
    return tuple(line[:120] for line in lines[:3])


def _version_near(root: Path, name: str | None) -> str | None:
    """``__version__`` of the package ``name`` (``causal_conv1d/__init__.py``), if plain."""
    if name is None:
        return None
    module = name.replace("-", "_").replace(".", "_")
    for init in (root / module / "__init__.py", root / "src" / module / "__init__.py"):
        match = _VERSION.search(read_text(init, 1 << 16))
        if match:
            try:
                return str(Version(match[1]))
            except InvalidVersion:
                return None
    return None


def _plain_name(text: str) -> str | None:
    """``PACKAGE_NAME = "x"`` at the top level, else the first ``name="x"`` in ``setup(...)``."""
    found = _PACKAGE_NAME.search(text)
    if found:
        return found[1]
    call = text.find("setup(")
    found = _SETUP_NAME.search(text, call) if call >= 0 else None
    return found[1] if found else None


def _named_gates(text: str) -> tuple[str, ...]:
    names = dict.fromkeys(_ENV_READ.findall(text))
    return tuple(n for n in names if any(g.matches(n) for g in gates()))


def gate_env(script: BuildScript) -> dict[str, str]:
    """The switches that open ``script``'s CUDA gate: every ``always`` row, then each switch
    it names, with the value of the row it matches."""
    env = {g.name: g.value for g in gates() if g.always and g.name}
    for name in script.gates:
        env[name] = next(g.value for g in gates() if g.matches(name))
    return env


def read_build_script(root: Path) -> BuildScript:
    """Read ``root``'s setup.py, else its CMakeLists.txt."""
    for file in ("setup.py", "CMakeLists.txt"):
        text = read_text(root / file)
        if not text:
            continue
        plain = _plain_name(text) if file == "setup.py" else None
        name = None
        if plain:
            try:
                name = canonicalize_name(plain, validate=True)
            except InvalidName:
                plain = None
        return BuildScript(
            file=file,
            force_switches=tuple(sorted(set(FORCE_SWITCH.findall(text)))),
            gates=_named_gates(text) if file == "setup.py" else (),
            torch_extension=bool(_TORCH_EXTENSION.search(text)),
            cuda_gate=bool(_CUDA_GATE.search(text)),
            arch_flags=_arch_lines(text),
            name=name,
            version=_version_near(root, plain),
        )
    return BuildScript()
