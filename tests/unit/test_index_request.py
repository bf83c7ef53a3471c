"""What ``cuship index`` decides before and after writing, as library calls: the request it
refuses (nothing given, a yank both set and lifted, an unyank with nothing kept) and the bad
wheels that fail the run once the index is written without them."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuship.errors import CheckFailed, UsageError
from cuship.index import IndexSummary, Skipped
from cuship.index.yank import index_request

WHEEL = "demo-1.0-py3-none-any.whl"


def test_a_yank_option_takes_its_reason_after_a_colon(tmp_path: Path) -> None:
    listed = tmp_path / "yanks.txt"
    listed.write_text("Other==2.0 broken build\n", encoding="utf-8")
    request = index_request([tmp_path], yanks=[f"{WHEEL}:bad ABI", "demo==1.1"], yank_file=listed)
    assert request.yanked == {WHEEL: "bad ABI", "demo==1.1": "", "other==2.0": "broken build"}
    assert request.inputs == (tmp_path,) and request.unyanked == frozenset()


def test_only_yank_changes_need_no_wheel_when_the_index_is_kept() -> None:
    request = index_request([], unyanks=["demo==1.0"], keep_existing=True)
    assert request.unyanked == {"demo==1.0"} and request.inputs == ()


@pytest.mark.parametrize(
    ("asked", "refusal"),
    [
        ({}, "no wheels given"),
        ({"yanks": ["demo==1.0"]}, "no wheels given"),
        ({"unyanks": ["demo==1.0"]}, "needs --keep-existing"),
        (
            {"yanks": ["demo==1.0"], "unyanks": ["Demo==1.0"], "keep_existing": True},
            "'demo==1.0' is both yanked and unyanked",
        ),
    ],
)
def test_a_request_that_cannot_be_done_is_a_usage_error(
    asked: dict[str, object], refusal: str
) -> None:
    with pytest.raises(UsageError, match=refusal) as caught:
        index_request([], **asked)  # type: ignore[arg-type]
    assert caught.value.exit_code == 2 and caught.value.hint


def _summary(*skipped: str) -> IndexSummary:
    return IndexSummary(
        site=Path("site"),
        wheels=1,
        projects=1,
        variants=(),
        skipped=tuple(Skipped(path=Path(name), reason="unreadable") for name in skipped),
        hashed=1,
        cached=0,
        base_url=None,
    )


def test_a_file_that_is_no_wheel_is_only_a_note() -> None:
    summary = _summary("README.md")
    assert summary.bad_wheels == ()
    summary.check_bad_wheels()


def test_a_wheel_that_could_not_be_indexed_fails_the_run_naming_the_first_five() -> None:
    names = [f"bad{i}-1.0-py3-none-any.whl" for i in range(7)]
    with pytest.raises(CheckFailed) as caught:
        _summary("README.md", *names).check_bad_wheels()
    message = str(caught.value)
    assert message.startswith("7 wheel(s) could not be indexed: 'bad0-1.0")
    assert "'bad4-1.0-py3-none-any.whl' (unreadable)" in message and "bad5" not in message
    assert " ...; the index was written without them" in message
    assert "--skip-bad" in (caught.value.hint or "")
