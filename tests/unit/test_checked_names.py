"""One checked name (issue 43): what passes :mod:`cuship._names` is safe as a path component, in a
URL path, a shell word, HTML text and a YAML scalar, and what does not is a UsageError (exit 2)
quoting it."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuship import _names
from cuship.errors import UsageError

_UNSAFE = re.compile(r"[\s\"'`$\\/<>&;|*?(){}\[\]#%~^\x00-\x1f\x7f]")  # "!": an epoch
CHECKS = (
    _names.project,
    _names.variant_label,
    _names.local_label,
    _names.file_name,
    _names.version,
)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.text(max_size=40))
def test_what_passes_a_check_holds_nothing_a_path_a_shell_or_html_reads(text: str) -> None:
    for check in CHECKS:
        try:
            value = check(text)
        except UsageError as err:
            assert err.exit_code == 2
            continue
        assert ".." not in value.split("/") and not _UNSAFE.search(value), (check, value)


@pytest.mark.parametrize(
    ("check", "text"),
    [
        (_names.project, "../../victim"),
        (_names.project, "x$(touch PWNED)"),
        (_names.project, "a" * 300),
        (_names.variant_label, "null"),
        (_names.variant_label, "CU130"),
        (_names.variant_label, "cu130\n"),
        (_names.local_label, "cu130 torch"),
        (_names.file_name, "../x.whl"),
        (_names.file_name, ".hidden.whl"),
        (_names.file_name, "a..b.whl"),
        (_names.version, "banana"),
        (_names.version, "²"),
        (_names.requirement, "--index-url=https://x"),
        (_names.base_url, "https://h/x?y"),
    ],
)
def test_a_name_that_is_not_one_is_refused_quoting_it(check: object, text: str) -> None:
    with pytest.raises(UsageError) as caught:
        check(text)  # type: ignore[operator]
    assert caught.value.exit_code == 2 and repr(text)[:20] in caught.value.message


def test_names_come_back_in_the_one_spelling() -> None:
    assert _names.project("My_Pkg.Name") == "my-pkg-name"
    assert _names.dist_name("My_Pkg.Name") == "my_pkg_name"
    assert _names.wheel_stem("My_Pkg", "1.0+cu130") == "my_pkg-1.0+cu130"
    assert _names.variant_label("null", null=True) == "null"
    assert _names.base_url("https://h/releases/download/v1/") == "https://h/releases/download/v1"
    assert _names.requirement("torch==2.13.0") == "torch==2.13.0"
