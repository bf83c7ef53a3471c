"""Projects dealt into the shares of a spread rebuild: largest first, each to the lightest share."""

from __future__ import annotations

from cuship.index._pool import deal


def test_the_largest_projects_go_first_each_to_the_lightest_share() -> None:
    sizes = {"a": 1, "b": 5, "c": 3, "d": 3, "e": 1}
    assert deal(sizes, 2) == [["b", "a", "e"], ["c", "d"]]
    assert sorted(sum(sizes[p] for p in share) for share in deal(sizes, 2)) == [6, 7]


def test_no_empty_share_and_one_share_takes_everything() -> None:
    assert deal({"a": 2, "b": 1}, 4) == [["a"], ["b"]]
    assert deal({"a": 2, "b": 1}, 1) == [["a", "b"]]
    assert deal({}, 3) == []
