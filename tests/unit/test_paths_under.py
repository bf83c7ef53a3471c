"""Every path built from input is proven to stay under its root before a delete or a replace
(issue 43): no module of ``src/cuship`` but :mod:`cuship._fs` calls ``shutil.rmtree``,
``os.remove``/``unlink``/``replace``/``rename``, ``Path.unlink``/``rmdir``/``replace``/``rename``;
the others go through ``_fs.remove_tree``, ``remove_file``, ``remove_dir`` and ``move``, which
check the path with ``_fs.under`` first. :data:`ALLOWED` names the exceptions and why."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cuship._fs import PathEscape, move, remove_file, remove_tree, under
from tests.codewalk import delete_call, walk

ALLOWED: dict[str, str] = {
    "builder/run/nvcc_shim.py:make_shadow:replace": (
        "runs with the standard library alone inside a build; both names are its own "
        "(nvcc.tmp and nvcc in the shadow toolkit it made)"
    ),
}


def test_the_walk_finds_planted_deletes(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "import os, shutil\nfrom pathlib import Path\n"
        "def f(p):\n    shutil.rmtree(p)\n    Path(p).unlink()\n    os.replace(p, p + 'x')\n"
        "def g(p, q):\n    Path(p).replace(q)\n    return 'a-b'.replace('-', '_')\n",
        encoding="utf-8",
    )
    modules, found, _ = walk(delete_call, "_fs.py", tmp_path)
    assert modules == 1
    assert found == ["m.py:f:shutil.rmtree", "m.py:f:unlink", "m.py:f:os.replace", "m.py:g:replace"]


def test_every_delete_and_replace_goes_through_under() -> None:
    modules, found, _ = walk(delete_call, "_fs.py")
    assert modules > 250
    unexplained = sorted(set(found) - set(ALLOWED))
    assert unexplained == [], "delete through cuship._fs (remove_tree, remove_file, move)"
    assert sorted(set(ALLOWED) - set(found)) == [], "drop the allow-listed calls that are gone"


@pytest.mark.parametrize(
    ("parts", "problem"),
    [
        (("../victim",), "climbs out with '..'"),
        (("a/../../victim",), "climbs out with '..'"),
        (("/etc/passwd",), "lies elsewhere"),
        (("",), "is not a path"),
        (("a\0b",), "is not a path"),
        (("a\\..\\b",), "is not a path"),
        ((), "is the directory itself"),
        (("link", "passwd"), "through a link"),
    ],
)
def test_a_path_that_leaves_its_root_is_refused(
    tmp_path: Path, parts: tuple[str, ...], problem: str
) -> None:
    root = tmp_path / "out"
    root.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (root / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(PathEscape, match=problem) as caught:
        under(root, *parts)
    assert caught.value.exit_code == 2


def test_the_helpers_act_only_under_the_root(tmp_path: Path) -> None:
    root, victim = tmp_path / "dist", tmp_path / "victim"
    root.mkdir()
    victim.mkdir()
    (victim / "keep.txt").write_text("the user's file")
    for act in (
        lambda: remove_tree(root, "../victim"),
        lambda: remove_file(root, "../victim/keep.txt"),
        lambda: move(root / "x", root, "../victim/keep.txt"),
    ):
        with pytest.raises(PathEscape):
            act()
    assert (victim / "keep.txt").read_text() == "the user's file"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f").write_text("x")
    remove_tree(root, "a")
    assert not (root / "a").exists() and root.is_dir()
    (root / "link").symlink_to(victim)
    remove_tree(root, "link")  # the link goes, never what it points at
    assert not os.path.lexists(root / "link") and (victim / "keep.txt").is_file()
    absolute = under(root, str(root / "sub" / "f.whl"))
    assert absolute == root / "sub" / "f.whl"
