"""`cuship index` against hostile input (issue 16): each row of the adversarial pass is a test.

A bad wheel is skipped with its reason while the rest is indexed (exit 1 unless --skip-bad);
METADATA is never inflated past its limit; the site is readable by anyone and holds no cache;
a rewritten wheel is rehashed; ``-o`` through a symlink and ``-o .`` work.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from cuship.cli import main
from cuship.errors import InputError
from cuship.events import Event, collect
from cuship.index import FileStamp, ScanCache, scan_report, site_records, write
from cuship.index.simple import cache_path
from tests.hostile_wheels import corrupt_deflate, foreign_dist_info, metadata_bomb
from tests.sitecheck import publish_problems, published
from tests.wheel_factory import make_wheel


def _reasons(directory: Path) -> dict[str, str]:
    _, skipped = scan_report([directory])
    return {s.path.name: s.reason for s in skipped}


def test_corrupt_deflate_in_metadata_is_skipped_and_the_run_goes_on(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "good", "1.0")
    corrupt_deflate(wheels, "corrupt")
    events: list[Event] = []
    summary = write([wheels], tmp_path / "site", emit=collect(events))
    assert summary.wheels == 1
    (skipped,) = summary.skipped
    assert skipped.path.name == "corrupt-1.0-py3-none-any.whl"
    assert "corrupt compressed data in METADATA" in skipped.reason
    assert any("corrupt-1.0-py3-none-any.whl" in e.message for e in events if e.level == "warning")


@pytest.mark.parametrize("honest_size", [True, False], ids=["declared", "size-lies"])
def test_a_metadata_bomb_is_refused_without_inflating_it(tmp_path: Path, honest_size: bool) -> None:
    bomb = metadata_bomb(tmp_path / "wheels", "bomb", 64, honest_size=honest_size)
    assert bomb.stat().st_size < 200_000
    reason = _reasons(tmp_path / "wheels")[bomb.name]
    # The declared size is refused unread; a lying header is caught at the limit or by the CRC.
    assert (
        ("8 MiB limit" in reason) if honest_size else ("broken zip" in reason or "limit" in reason)
    )


def test_a_foreign_dist_info_directory_is_refused_as_pip_would(tmp_path: Path) -> None:
    wheel = foreign_dist_info(tmp_path / "wheels", "victim", "other")
    reason = _reasons(tmp_path / "wheels")[wheel.name]
    assert "'other-1.0.dist-info'" in reason and "'victim'" in reason and "pip" in reason


def test_a_normalised_dist_info_name_is_accepted(tmp_path: Path) -> None:
    make_wheel(tmp_path / "wheels", "Foo.Bar", "1.0+cu128")  # foo_bar-1.0+cu128.dist-info
    wheels, skipped = scan_report([tmp_path / "wheels"])
    assert [w.project for w in wheels] == ["foo-bar"] and skipped == ()


def test_cli_exits_1_after_indexing_the_rest_unless_skip_bad(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "good", "1.0")
    corrupt_deflate(wheels, "corrupt")
    (wheels / "README.txt").write_text("not a wheel, only noted")
    site = tmp_path / "site"
    assert main(["index", str(wheels), "-o", str(site)]) == 1
    err = capsys.readouterr().err
    assert "error: 1 wheel(s) could not be indexed: 'corrupt-1.0-py3-none-any.whl'" in err
    assert "Traceback" not in err
    assert (site / "simple" / "good" / "index.html").is_file()
    assert main(["index", str(wheels), "-o", str(site), "--skip-bad"]) == 0


@pytest.fixture
def strict_umask() -> Iterator[None]:
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


def _modes(site: Path) -> dict[str, int]:
    return {str(p.relative_to(site)): stat.S_IMODE(p.stat().st_mode) for p in published(site)}


@pytest.mark.usefixtures("strict_umask")
def test_the_site_is_readable_by_anyone_whatever_the_umask_and_input_modes(tmp_path: Path) -> None:
    private = make_wheel(tmp_path / "wheels", "private", "1.0+cu128")
    private.chmod(0o600)
    shared = make_wheel(tmp_path / "wheels", "shared", "1.0")
    shared.chmod(0o644)
    site = tmp_path / "site"
    write([tmp_path / "wheels"], site)
    assert stat.S_IMODE(site.stat().st_mode) == 0o755
    modes = _modes(site)
    dirs = {k: v for k, v in modes.items() if (site / k).is_dir()}
    files = {k: v for k, v in modes.items() if not (site / k).is_dir()}
    assert set(dirs.values()) == {0o755} and "cu128/simple" in dirs
    assert set(files.values()) == {0o644} and f"files/{private.name}" in files
    assert publish_problems(site) == []
    assert stat.S_IMODE(private.stat().st_mode) == 0o600  # the input is not changed
    assert (site / "files" / shared.name).stat().st_ino == shared.stat().st_ino  # still linked
    assert private.stat().st_nlink == 1  # the link tried first was taken back
    # Each cache row has the stamp the run left its wheel with (linked or not): nothing is
    # read again by the next run that sees the same wheels.
    with ScanCache(cache_path(site)) as cache:
        for wheel in (private, shared):
            assert cache.get(str(wheel), FileStamp.of(wheel.stat())) is not None, wheel.name


def test_the_cache_lives_in_the_sites_own_state_never_published_nothing_beside(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    write([make_wheel(tmp_path / "wheels", "pkg", "1.0")], site)
    assert publish_problems(site) == []
    assert cache_path(site).is_file() and cache_path(site).parent == site / ".cuship"
    assert stat.S_IMODE((site / ".cuship").stat().st_mode) == 0o700
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site", "wheels"]  # no lock, no cache
    again = write([tmp_path / "wheels"], site)
    assert (again.hashed, again.cached) == (0, 1)  # the cache still serves
    rebuilt = write([tmp_path / "wheels"], site, rebuild=True)  # a new tree swapped in
    assert (rebuilt.hashed, rebuilt.cached) == (0, 1), "the state moves with the site"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site", "wheels"]


def _rewrite_in_place(path: Path) -> None:
    """Change one byte (a header's timestamp, so the wheel stays valid), same size and mtime."""
    before = path.stat()
    with path.open("r+b") as handle:
        handle.seek(10)
        byte = handle.read(1)
        handle.seek(10)
        handle.write(bytes([byte[0] ^ 1]))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ino,
    )


def _listed_sha256(site: Path) -> str:
    (record,) = site_records(site)
    return str(record["sha256"])


def test_a_wheel_rewritten_in_place_with_the_same_size_and_mtime_is_rehashed(
    tmp_path: Path,
) -> None:
    import hashlib

    wheel = make_wheel(tmp_path / "wheels", "pkg", "1.0")
    site = tmp_path / "site"
    write([wheel], site)
    _rewrite_in_place(wheel)
    with pytest.raises(InputError, match="would change the bytes"):  # the rehash saw it
        write([wheel], site)
    summary = write([wheel], site, replace_published=True)
    assert (summary.hashed, summary.cached) == (0, 1), "the refused run's rehash was kept"
    assert _listed_sha256(site) == hashlib.sha256(wheel.read_bytes()).hexdigest()


def test_a_wheel_replaced_by_another_file_of_the_same_size_and_mtime_is_rehashed(
    tmp_path: Path,
) -> None:
    import hashlib

    wheel = make_wheel(tmp_path / "wheels", "pkg", "1.0")
    site = tmp_path / "site"
    write([wheel], site)
    before = wheel.stat()
    data = bytearray(wheel.read_bytes())
    data[10] ^= 1
    replacement = tmp_path / "replacement"
    replacement.write_bytes(bytes(data))
    os.utime(replacement, ns=(before.st_atime_ns, before.st_mtime_ns))
    replacement.replace(wheel)
    assert write([wheel], site, replace_published=True).hashed == 1
    assert _listed_sha256(site) == hashlib.sha256(bytes(data)).hexdigest()


def test_output_through_a_symlink_writes_into_its_target(tmp_path: Path) -> None:
    target = tmp_path / "real-site"
    target.mkdir()
    link = tmp_path / "site"
    link.symlink_to(target, target_is_directory=True)
    wheel = make_wheel(tmp_path / "wheels", "pkg", "1.0")
    write([wheel], link)
    assert link.is_symlink() and link.resolve() == target
    assert (target / "simple" / "pkg" / "index.html").is_file()
    write([wheel], link)  # and again, over the index it wrote
    assert link.is_symlink() and (target / "cuship-index.json").is_file()


def test_output_dot_in_an_empty_directory_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = make_wheel(tmp_path / "wheels", "pkg", "1.0")
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    assert main(["index", str(wheel), "-o", "."]) == 0
    assert (here / "simple" / "pkg" / "index.html").is_file()
    assert not any(p.name.endswith(".lock") for p in here.iterdir())
    assert "`cd .` to see the index" in capsys.readouterr().err
