"""The GitHub stand-in's expressions and runner files (tests/integration/gha_expr.py), on what
the generated workflows write and on GitHub's documented semantics."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.gha_expr import (
    ExprError,
    condition,
    evaluate,
    read_command_file,
    substitute,
)

CONTEXTS: dict[str, Any] = {
    "github": {"event_name": "push", "ref": "refs/heads/main"},
    "matrix": {"job": "pkg-0.1.0-cp311-cu130", "cuda": "13.0.2"},
    "needs": {"prepare": {"result": "success", "outputs": {"matrix": '{"include": [{"a": 1}]}'}}},
    "steps": {"matrix": {"outputs": {"matrix": "[]"}}},
    "inputs": {"release": False},
}


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        ("github.event_name != 'schedule'", True),
        ("github.event_name == 'PUSH'", True),  # strings compare ignoring case
        ("github['event_name']", "push"),
        ("matrix.job", "pkg-0.1.0-cp311-cu130"),
        ("fromJSON(needs.prepare.outputs.matrix)", {"include": [{"a": 1}]}),
        ("github.event_name != 'workflow_dispatch' || inputs.release", True),
        ("inputs.release || 'fallback'", "fallback"),  # || returns an operand
        ("inputs.release && 'x'", False),
        ("!inputs.release", True),
        ("matrix.missing", None),
        ("contains('abc', 'B')", True),
        ("startsWith(github.ref, 'refs/heads/')", True),
        ("format('{0}-{1}', 'a', 1)", "a-1"),
        ("1 < 2 && 'it''s'", "it's"),
    ],
)
def test_evaluate(expr: str, value: Any) -> None:
    assert evaluate(expr, CONTEXTS) == value


def test_substitute_keeps_a_whole_expression_typed_and_texts_embedded_ones() -> None:
    matrix = substitute("${{ fromJSON(needs.prepare.outputs.matrix) }}", CONTEXTS)
    assert matrix == {"include": [{"a": 1}]}
    assert substitute("image:${{ matrix.cuda }}-devel", CONTEXTS) == "image:13.0.2-devel"
    assert substitute("${{ inputs.release }}", CONTEXTS) is False
    assert substitute("x ${{ inputs.release }}", CONTEXTS) == "x false"


def test_conditions_default_to_success_and_status_functions_override() -> None:
    assert condition(None, CONTEXTS, status="success")
    assert not condition(None, CONTEXTS, status="failure")
    assert condition("always()", CONTEXTS, status="failure")
    assert condition("${{ failure() }}", CONTEXTS, status="failure")
    assert not condition("github.event_name == 'push'", CONTEXTS, status="failure")
    assert not condition("github.event_name == 'schedule'", CONTEXTS, status="success")


@pytest.mark.parametrize(
    "expr", ["hashFiles('x')", "secrets.TOKEN ==", "unknown.context", "a ~ b", "(1"]
)
def test_what_the_stand_in_does_not_read_is_refused(expr: str) -> None:
    with pytest.raises(ExprError):
        evaluate(expr, CONTEXTS)


def test_runner_files_take_lines_and_delimited_blocks() -> None:
    text = "A=1\nPATHS=a=b\n\nNOTES<<EOF\nline 1\nline=2\nEOF\nB=\n"
    assert read_command_file(text) == {"A": "1", "PATHS": "a=b", "NOTES": "line 1\nline=2", "B": ""}
    with pytest.raises(ExprError, match="no closing"):
        read_command_file("X<<END\nno end\n")
    with pytest.raises(ExprError, match="NAME=value"):
        read_command_file("just words\n")
