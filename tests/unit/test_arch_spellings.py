"""Every SM / compute-capability spelling is parsed in ``cuship/arch.py``, so one regex per
spelling lives there and every other module asks it.

A *regex literal* is a string (or bytes) constant given as the pattern of a ``re`` function
(``re.compile``, ``re.match``, ``re.fullmatch``, ``re.search``, ``re.sub``, ``re.split``,
``re.findall``, ``re.finditer``), or the ``"pattern"`` of a JSON Schema written as a dict. It
spells an SM or a compute capability when its text names ``sm_``, ``compute_`` or
``_real|virtual`` (a variant's ``sm_arch``), or when, compiled, it accepts an SM by name
(``sm_90``, ``compute_90``) or with an arch suffix (``90a``, ``100f``) but not a plain word, or the compute capabilities ``9.0`` and
``12.0`` but not the version ``12.10`` (a capability has one minor digit).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "cuship"
HOME = SRC / "arch.py"
_RE_FUNCTIONS = frozenset(
    {"compile", "match", "fullmatch", "search", "sub", "subn", "split", "findall", "finditer"}
)
_NAMES = ("sm_", "compute_", "real|virtual")


def _literals(tree: ast.AST) -> Iterator[tuple[int, str | bytes]]:
    """(line, pattern) of every regex literal in a module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            is_re = (
                isinstance(func, ast.Attribute)
                and func.attr in _RE_FUNCTIONS
                and isinstance(func.value, ast.Name)
                and func.value.id == "re"
            )
            first = node.args[0] if node.args else None
            if is_re and isinstance(first, ast.Constant) and isinstance(first.value, str | bytes):
                yield node.lineno, first.value
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                is_pattern = isinstance(key, ast.Constant) and key.value == "pattern"
                if is_pattern and isinstance(value, ast.Constant) and isinstance(value.value, str):
                    yield node.lineno, value.value


def _accepts(pattern: re.Pattern[str] | re.Pattern[bytes], text: str) -> bool:
    if isinstance(pattern.pattern, bytes):
        return pattern.fullmatch(text.encode()) is not None
    return pattern.fullmatch(text) is not None


def spells_arch(source: str | bytes) -> bool:
    """Whether a regex literal spells an SM or a compute capability (see the module)."""
    text = source.decode("latin-1") if isinstance(source, bytes) else source
    if any(name in text.lower() for name in _NAMES):
        return True
    try:
        pattern = re.compile(source)
    except re.error:
        return False
    named = any(_accepts(pattern, name) for name in ("sm_90", "compute_90", "sm_90a"))
    suffixed = _accepts(pattern, "90a") or _accepts(pattern, "100f")
    sm = (named or suffixed) and not _accepts(pattern, "abc")
    cc = _accepts(pattern, "9.0") and _accepts(pattern, "12.0") and not _accepts(pattern, "12.10")
    return sm or cc


def breaches(source: str, name: str) -> list[str]:
    """``name:line: pattern`` for each regex literal of ``source`` that spells an SM or a cc."""
    return [
        f"{name}:{line}: {pattern!r}"
        for line, pattern in _literals(ast.parse(source))
        if spells_arch(pattern)
    ]


def test_only_arch_spells_sm_and_cc() -> None:
    found = [
        breach
        for path in sorted(SRC.rglob("*.py"))
        if path != HOME
        for breach in breaches(path.read_text(encoding="utf-8"), str(path.relative_to(SRC)))
    ]
    assert found == [], "parse these with cuship.arch (add a function there if none fits):\n" + (
        "\n".join(found)
    )


def test_arch_holds_the_spellings_the_test_knows() -> None:
    # the detector sees arch.py's own patterns, so an empty result above means something
    assert len(breaches(HOME.read_text(encoding="utf-8"), "arch.py")) >= 8


def test_a_planted_breach_fails() -> None:
    planted = (
        "import re\n"
        '_CC = re.compile(r"^\\d{1,2}\\.\\d$")\n'
        '_SM = re.compile(r"(\\d+)([a-z]*)")\n'
        '_NAME = re.compile(r"(?:sm|compute)_\\d{2,3}")\n'
        'SCHEMA = {"type": "string", "pattern": "^[0-9]{1,3}[0-9]_(real|virtual)$"}\n'
        "def f(t):\n"
        '    return re.fullmatch(rb"[1-9][0-9]?\\.[0-9]", t)\n'
    )
    assert [b.split(":")[1] for b in breaches(planted, "planted.py")] == ["2", "3", "4", "5", "7"]


def test_versions_and_words_are_not_arch_spellings() -> None:
    for pattern in (
        r"^\d+\.\d+(?:\.\d+)?$",  # a driver version
        r"\d{1,2}\.\d{1,2}",  # a PTX ISA version
        r"[A-Za-z0-9_.+-]{1,200}",  # a library name
        r"^cu(\d{2,3})$",  # a CUDA label
        r"^manylinux_(\d+)_(\d+)_",
    ):
        assert not spells_arch(pattern), pattern
