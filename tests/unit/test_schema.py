"""The strict loader shared by cuship.toml and the data files: the errors a user sees."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from packaging.version import Version

from cuship.errors import ConfigError
from cuship.schema import Place, field_doc, load, schema


@dataclass(frozen=True, slots=True, kw_only=True)
class _Row:
    """A row."""

    version: Version = field_doc("A version.")
    tags: tuple[str, ...] = field_doc("Tags.", non_empty=True)
    sizes: tuple[int, ...] = field_doc("Sizes.", default=())
    note: str = field_doc("A note.", default="")


@dataclass(frozen=True, slots=True, kw_only=True)
class _File:
    """A file."""

    row: tuple[_Row, ...] = field_doc("Rows.", non_empty=True)


def _error(raw: object, *, strict: bool = True) -> str:
    with pytest.raises(ConfigError) as caught:
        load(_File, raw, source="f.toml", strict=strict)
    assert caught.value.exit_code == 2
    return str(caught.value)


def test_versions_are_read_from_strings() -> None:
    loaded = load(_File, {"row": [{"version": "12.8.1", "tags": ["a"]}]}, source="f.toml")
    assert loaded.row[0].version == Version("12.8.1")
    assert _error({"row": [{"version": "r520", "tags": ["a"]}]}) == (
        "f.toml: row[0].version: 'r520' is not a version"
    )
    assert "quote it" in _error({"row": [{"version": 12.8, "tags": ["a"]}]})


def test_strict_wants_lists_and_strings_as_such() -> None:
    raw = {"row": [{"version": "1", "tags": "a", "note": 3}]}
    assert _error(raw) == "f.toml: row[0].tags: expected a list of strings, got 'a'"
    forgiving = load(_File, raw, source="f.toml")
    assert forgiving.row[0].tags == ("a",) and forgiving.row[0].note == "3"
    bad_item = {"row": [{"version": "1", "tags": ["a"], "sizes": [1, "2"]}]}
    assert "row[0].sizes: expected a list of integers, got [1, '2']" in _error(bad_item)
    assert "row[0].sizes[1]: expected an integer" in _error(bad_item, strict=False)


def test_non_empty_lists_are_required() -> None:
    assert "row[0].tags: missing or empty" in _error({"row": [{"version": "1", "tags": []}]})
    message = _error({"other": [{"x": 1}]})
    assert message.startswith("f.toml: row: missing or empty")
    assert "add [[row]] tables" in message


def test_a_typo_is_an_unknown_key_and_a_missing_key_names_itself() -> None:
    typo = _error({"row": [{"version": "1", "tagz": ["a"]}]})
    assert "row[0].tagz: unknown key" in typo and "did you mean 'tags'?" in typo
    assert "row[0].version: missing required key" in _error({"row": [{"tags": ["a"]}]})


def test_schema_follows_strictness() -> None:
    strict = schema(_File, strict=True)["properties"]["row"]
    assert strict["type"] == "array" and strict["minItems"] == 1
    assert strict["items"]["required"] == ["version", "tags"]
    forgiving = schema(_Row)["properties"]["sizes"]
    assert forgiving["anyOf"][0] == {"type": "integer"}


def test_a_place_builds_errors_for_checks_run_after_loading() -> None:
    rows = Place("cuda.toml").at("toolkit").each(["a", "b"])
    place, value = rows[1]
    assert value == "b"
    error = place.fail("sms", "'3x5' is not an SM", hint='write targets like "90"')
    assert (
        str(error)
        == "cuda.toml: toolkit[1].sms: '3x5' is not an SM\n  hint: write targets like \"90\""
    )
    assert place.fail(None, "broken").key == "toolkit[1]"
