"""Sizes a reader can take in at once: no function or method of ``src/cuship`` over
:data:`MAX_FUNCTION` lines (from its ``def`` to its last line, docstring included, decorators
not), no module over :data:`MAX_MODULE` lines, and no function or method outside ``cli/`` (a
click command takes one parameter per option) with more than :data:`MAX_PARAMETERS`
parameters (positional and keyword-only; not ``self``/``cls``, ``*args``, ``**kwargs``).

What is over a limit today is listed below with the reason, and the lists may only shrink: an
item listed that is now within its limit fails the test too, so that it is taken off.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

from tests.unit.test_layout import SRC

MAX_FUNCTION = 60
MAX_MODULE = 600
MAX_PARAMETERS = 10

# "path:function" (path under src/cuship) -> why it is still long
LONG_FUNCTIONS: Mapping[str, str] = {}

# path under src/cuship -> why it is still long
LONG_MODULES: Mapping[str, str] = {}

# "path:function" (path under src/cuship, outside cli/) -> why it takes so many parameters
WIDE_FUNCTIONS: Mapping[str, str] = {
    "process.py:run": "the one process runner: each keyword is one of subprocess.run's own, "
    "named at every call so that no caller builds an options object",
}


def module_lines(text: str) -> int:
    return text.count("\n")


def long_functions(text: str, name: str, limit: int = MAX_FUNCTION) -> Iterator[tuple[str, int]]:
    """``(name:function, lines)`` of each function or method of ``text`` over ``limit`` lines."""
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            assert node.end_lineno is not None
            lines = node.end_lineno - node.lineno + 1
            if lines > limit:
                yield f"{name}:{node.name}", lines


def over_limits(src: Path) -> tuple[dict[str, int], dict[str, int]]:
    """The functions and the modules of the package at ``src`` over the limits, with sizes."""
    functions: dict[str, int] = {}
    modules: dict[str, int] = {}
    for path in sorted(src.rglob("*.py")):
        name = path.relative_to(src).as_posix()
        text = path.read_text(encoding="utf-8")
        if module_lines(text) > MAX_MODULE:
            modules[name] = module_lines(text)
        functions.update(long_functions(text, name))
    return functions, modules


def parameter_count(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Its positional and keyword-only parameters, ``self``/``cls`` and ``*``/``**`` not."""
    args = node.args
    named = [*args.posonlyargs, *args.args]
    if named and named[0].arg in ("self", "cls"):
        named = named[1:]
    return len(named) + len(args.kwonlyargs)


def wide_functions(src: Path, limit: int = MAX_PARAMETERS) -> dict[str, int]:
    """``{"path:function": parameters}`` of each function or method of the package at ``src``,
    outside ``cli/``, with more than ``limit`` parameters."""
    found: dict[str, int] = {}
    for path in sorted(src.rglob("*.py")):
        name = path.relative_to(src).as_posix()
        if name.startswith("cli/"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        defs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        for node in defs:  # two of one name (a method and a function): the wider counts
            key = f"{name}:{node.name}"
            found[key] = max(found.get(key, 0), parameter_count(node))
    return {key: count for key, count in found.items() if count > limit}


def breaches(
    found: Mapping[str, int],
    allowed: Mapping[str, str],
    limit: int,
    what: str,
    unit: str = "lines",
) -> list[str]:
    """What is over ``limit`` and not allowed, and what is allowed but no longer over it."""
    over = [
        f"{key}: {size} {unit}, over {limit}" for key, size in found.items() if key not in allowed
    ]
    stale = [
        f"{key}: listed as {what}, now within {limit}: take it off"
        for key in allowed
        if key not in found
    ]
    return over + stale


def test_no_function_over_the_limit() -> None:
    functions, _ = over_limits(SRC)
    assert breaches(functions, LONG_FUNCTIONS, MAX_FUNCTION, "a long function") == []


def test_no_module_over_the_limit() -> None:
    _, modules = over_limits(SRC)
    assert breaches(modules, LONG_MODULES, MAX_MODULE, "a long module") == []


def test_planted_long_code_and_a_stale_allowance_fail(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(60))
    (tmp_path / "long.py").write_text(
        f"def f():\n{body}\n\nclass C:\n    def ok(self):\n        pass\n"
    )
    (tmp_path / "big.py").write_text("x = 1\n" * (MAX_MODULE + 1))
    (tmp_path / "small.py").write_text("def g():\n" + "    pass\n" * 59)
    functions, modules = over_limits(tmp_path)
    assert functions == {"long.py:f": 61}
    assert modules == {"big.py": MAX_MODULE + 1}
    allowed = {"small.py:g": "was long"}
    assert breaches(functions, allowed, MAX_FUNCTION, "a long function") == [
        "long.py:f: 61 lines, over 60",
        "small.py:g: listed as a long function, now within 60: take it off",
    ]
    assert breaches(modules, {"big.py": "a table"}, MAX_MODULE, "a long module") == []


def test_no_function_outside_the_cli_takes_more_than_the_limit_of_parameters() -> None:
    found = wide_functions(SRC)
    assert breaches(found, WIDE_FUNCTIONS, MAX_PARAMETERS, "a wide function", "parameters") == []


def test_planted_wide_functions_and_a_stale_allowance_fail(tmp_path: Path) -> None:
    eleven = ", ".join(f"a{i}" for i in range(10))
    (tmp_path / "wide.py").write_text(
        f"def f({eleven}, *, k):\n    pass\n\n\n"
        f"class C:\n    def m(self, {eleven}, *args, **kwargs):\n        pass\n\n"
        f"    @classmethod\n    def ok(cls, {eleven.rsplit(', ', 1)[0]}, /, *, k):\n        pass\n"
    )
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "command.py").write_text(f"def command({eleven}, k):\n    pass\n")
    (tmp_path / "narrow.py").write_text("def g(a, b):\n    pass\n")
    assert wide_functions(tmp_path) == {"wide.py:f": 11}
    allowed = {"narrow.py:g": "was wide"}
    assert breaches(wide_functions(tmp_path), allowed, 10, "a wide function", "parameters") == [
        "wide.py:f: 11 parameters, over 10",
        "narrow.py:g: listed as a wide function, now within 10: take it off",
    ]
