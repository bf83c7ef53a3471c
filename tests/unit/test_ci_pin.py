"""Which cuship generated CI installs: PEP 610 records read back, and the pin they give."""

from __future__ import annotations

import pytest

from cuship.ci.pin import pin_cuship
from cuship.errors import UsageError
from cuship.provenance.direct_url import InstallSource, parse_direct_url

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _parse(document: str | None) -> InstallSource:
    return parse_direct_url(document, name="cuship", version="0.1.0")


def test_each_pep_610_origin_and_its_requirement() -> None:
    assert _parse(None).requirement("all") == "cuship[all]==0.1.0"
    vcs = _parse(
        '{"url": "https://github.com/acme/cuship", "vcs_info": {"vcs": "git", '
        f'"commit_id": "{COMMIT}", "requested_revision": "main"}}}}'
    )
    assert vcs.requirement("all") == f"cuship[all] @ git+https://github.com/acme/cuship@{COMMIT}"
    assert "asked for 'main'" in vcs.whence()
    remote = _parse('{"url": "https://files.example/cuship-0.1.0.whl", "archive_info": {}}')
    assert remote.requirement() == "cuship @ https://files.example/cuship-0.1.0.whl"
    for local in (
        '{"url": "file:///tmp/cuship-0.1.0.whl", "archive_info": {}}',
        '{"url": "file:///src/cuship", "dir_info": {}}',
        '{"url": "file:///src/cuship", "dir_info": {"editable": true}}',
    ):
        assert _parse(local).requirement("all") is None, local
    assert _parse('{"url": "file:///src/cuship", "dir_info": {"editable": true}}').kind == (
        "editable"
    )


@pytest.mark.parametrize(
    "document", ['{"dir_info": {}}', '{"url": "x"}', "[]", '{"url": "a\\nb", "dir_info": {}}']
)
def test_a_record_that_is_not_pep_610_is_refused(document: str) -> None:
    with pytest.raises(ValueError, match=r"direct_url\.json"):
        _parse(document)


def test_pin_order_option_then_config_then_this_cuship() -> None:
    index = _parse(None)
    assert pin_cuship(["cuship==9"], ["cuship==8"], index).requirements == ("cuship==9",)
    assert pin_cuship([], ["cuship==8"], index).why == "[ci] cuship in the config"
    pinned = pin_cuship([], [], index)
    assert pinned.requirements == ("cuship[all]==0.1.0",)
    assert "installed from an index" in pinned.why and pinned.action is None


def test_a_github_commit_brings_cuships_action_at_that_commit() -> None:
    vcs = _parse(
        '{"url": "https://github.com/acme/cuship.git", "vcs_info": '
        f'{{"vcs": "git", "commit_id": "{COMMIT}"}}}}'
    )
    pin = pin_cuship([], [], vcs)
    assert pin.action == f"acme/cuship@{COMMIT}"
    assert (
        pin_cuship(["cuship[all] @ git+https://github.com/acme/cuship@main"], [], vcs).action
        is None
    )


def test_a_local_or_editable_cuship_is_refused_with_the_fix() -> None:
    editable = _parse('{"url": "file:///src/cuship", "dir_info": {"editable": true}}')
    with pytest.raises(UsageError, match="an editable checkout") as err:
        pin_cuship([], [], editable)
    assert err.value.exit_code == 2
    assert "--cuship" in (err.value.hint or "") and "[ci] cuship" in (err.value.hint or "")
    source = InstallSource(distribution="cuship", version="0.1.0", kind="source", location="/x")
    with pytest.raises(UsageError, match="a source tree"):
        pin_cuship([], [], source)
