"""Scanning bad input, the hash cache, atomic writes, the lock and the `cuship index` command."""

from __future__ import annotations

import json
import os
import re
import zipfile
from collections.abc import Mapping
from pathlib import Path

import pytest

from cuship.cli import main
from cuship.docs.documents import schema_file
from cuship.errors import InputError, NothingToDo, UsageError
from cuship.events import Event, collect
from cuship.index import (
    FileStamp,
    ScanCache,
    parse_yank_lines,
    scan_report,
    site_records,
    write,
)
from tests.jsondocs import schema_errors
from tests.wheel_factory import make_wheel


def _warnings(events: list[Event]) -> list[str]:
    return [e.message for e in events if e.level == "warning"]


def test_bad_inputs_are_skipped_with_a_warning_naming_each(tmp_path: Path) -> None:
    good = make_wheel(tmp_path, "good", "1.0")
    (tmp_path / "README.txt").write_text("hello")
    (tmp_path / "not a wheel name.whl").write_bytes(good.read_bytes())
    (tmp_path / "broken-1.0-py3-none-any.whl").write_bytes(b"PK\x03\x04 truncated")
    no_meta = tmp_path / "nometa-1.0-py3-none-any.whl"
    with zipfile.ZipFile(no_meta, "w") as archive:
        archive.writestr("nometa.py", "")
    make_wheel(tmp_path, "liar", "1.0", filename="liar-2.0-py3-none-any.whl")
    events: list[Event] = []
    wheels, skipped = scan_report([tmp_path], emit=collect(events))
    assert [w.filename for w in wheels] == ["good-1.0-py3-none-any.whl"]
    reasons = {s.path.name: s.reason for s in skipped}
    assert set(reasons) == {
        "README.txt",
        "not a wheel name.whl",
        "broken-1.0-py3-none-any.whl",
        "nometa-1.0-py3-none-any.whl",
        "liar-2.0-py3-none-any.whl",
    }
    assert "broken zip" in reasons["broken-1.0-py3-none-any.whl"]
    assert "METADATA" in reasons["nometa-1.0-py3-none-any.whl"]
    assert "'2.0'" in reasons["liar-2.0-py3-none-any.whl"]
    warned = "\n".join(_warnings(events))
    assert all(name in warned for name in reasons)


def test_zero_valid_wheels_is_nothing_to_do(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "x.txt").write_text("x")
    with pytest.raises(NothingToDo) as caught:
        write([tmp_path / "in"], tmp_path / "site")
    assert caught.value.exit_code == 4
    assert not (tmp_path / "site").exists()


def test_missing_input_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="nope"):
        write([tmp_path / "nope"], tmp_path / "site")


def test_two_different_files_with_one_name_is_an_error(tmp_path: Path) -> None:
    make_wheel(tmp_path / "a", "same", "1.0")
    make_wheel(tmp_path / "b", "same", "1.0", modules={"same": "X = 2\n"})
    with pytest.raises(InputError, match=re.escape("same-1.0-py3-none-any.whl")):
        write([tmp_path / "a", tmp_path / "b"], tmp_path / "site")


def test_cache_rereads_only_new_or_changed_files(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    for i in range(5):
        make_wheel(wheels, f"pkg{i}", "1.0")
    site = tmp_path / "site"
    first = write([wheels], site)
    assert (first.hashed, first.cached) == (5, 0)
    make_wheel(wheels, "pkg9", "1.0")
    changed = make_wheel(wheels, "pkg0", "1.0", modules={"pkg0": "X = 1\n"})
    os.utime(changed, ns=(1, 1))
    second = write([wheels], site, replace_published=True)
    assert (second.hashed, second.cached) == (2, 4)
    assert len(site_records(site)) == 6


def test_cache_survives_corruption(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not sqlite" * 100)
    with ScanCache(path) as cache:
        assert cache.get("x", FileStamp(1, 1, 1, 1)) is None


def test_wheels_are_linked_into_files(tmp_path: Path) -> None:
    source = make_wheel(tmp_path / "wheels", "pkg", "1.0+cu128")
    site = tmp_path / "site"
    write([source], site)
    placed = site / "files" / source.name
    assert placed.read_bytes() == source.read_bytes()
    assert placed.stat().st_ino == source.stat().st_ino  # hard link on one filesystem


def test_base_url_keeps_wheels_out_of_the_tree(tmp_path: Path) -> None:
    source = make_wheel(tmp_path / "wheels", "pkg", "1.0")
    site = tmp_path / "site"
    write([source], site, base_url="https://host.example/dl/")
    assert not (site / "files" / source.name).exists()
    assert (site / "files" / f"{source.name}.metadata").is_file()
    page = (site / "simple" / "pkg" / "index.html").read_text()
    assert 'href="https://host.example/dl/pkg-1.0-py3-none-any.whl#sha256=' in page


def test_a_failure_mid_write_leaves_the_old_site_intact(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "pkg", "1.0")
    site = tmp_path / "site"
    write([wheels], site)
    before = {p: p.read_bytes() for p in sorted(site.rglob("*")) if p.is_file()}
    make_wheel(wheels, "pkg", "2.0")

    def explode(path: Path) -> Mapping[str, object]:
        raise RuntimeError(f"inspector crashed on {path.name}")

    with pytest.raises(RuntimeError, match="inspector crashed"):
        write([wheels], site, describe=explode)
    after = {p: p.read_bytes() for p in sorted(site.rglob("*")) if p.is_file()}
    assert after == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".site.new")] == []


def test_an_interrupted_two_step_swap_is_undone(tmp_path: Path) -> None:
    site = tmp_path / "site"
    write([make_wheel(tmp_path / "wheels", "pkg", "1.0")], site)
    stash = tmp_path / ".site.old-crashed"
    stash.mkdir()
    site.rename(stash / "tree")  # as if the run died between the two renames
    summary = write([tmp_path / "wheels"], site)
    assert summary.cached == 1  # the restored tree's cache was used
    assert not stash.exists()


def test_refuses_to_replace_a_directory_it_did_not_write(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "precious.txt").write_text("keep me")
    with pytest.raises(UsageError, match="refusing to replace"):
        write([make_wheel(tmp_path / "w", "pkg", "1.0")], home)
    assert (home / "precious.txt").read_text() == "keep me"


def test_describe_output_lands_in_the_manifest(tmp_path: Path) -> None:
    source = make_wheel(tmp_path / "w", "pkg", "1.0")
    site = tmp_path / "site"
    write([source], site, describe=lambda p: {"size_from_describe": p.stat().st_size})
    record = site_records(site)[0]
    assert record["describe"] == {"size_from_describe": source.stat().st_size}


def test_yank_entries() -> None:
    lines = ["# comment", "", "Foo.Bar==1.0 broken on py3.12", "foo-2.0-py3-none-any.whl"]
    assert parse_yank_lines(lines) == {
        "foo-bar==1.0": "broken on py3.12",
        "foo-2.0-py3-none-any.whl": "",
    }
    with pytest.raises(InputError, match="'foo'"):
        parse_yank_lines(["foo"])


def test_cli_exit_codes_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "pkg", "1.0+cu128torch2.8")
    (wheels / "junk.txt").write_text("x")
    site = tmp_path / "site"
    code = main(["index", "--wheels-dir", str(wheels), "--output-dir", str(site), "--json"])
    captured = capsys.readouterr()
    assert code == 0
    summary = json.loads(captured.out)
    assert summary["wheels"] == 1 and summary["variants"] == ["cu128torch2.8"]
    assert schema_errors(schema_file("index"), summary) == []
    assert "junk.txt" in captured.err
    (tmp_path / "empty").mkdir()
    assert main(["index", str(tmp_path / "empty"), "-o", str(tmp_path / "s2")]) == 4
    assert main(["index", str(wheels), "-o", str(site), "--base-url", "nope"]) == 2
    assert (
        main(["index", str(wheels), "-o", str(site), "--yank", "pkg==1.0+cu128torch2.8:bad"]) == 0
    )
    page = json.loads((site / "simple" / "pkg" / "index.json").read_text())
    assert page["files"][0]["yanked"] == "bad"


def test_concurrent_runs_do_not_interleave(tmp_path: Path) -> None:
    import threading

    first = [make_wheel(tmp_path / "a", f"alpha{i}", "1.0") for i in range(20)]
    second = [make_wheel(tmp_path / "b", f"beta{i}", "1.0") for i in range(20)]
    site = tmp_path / "site"
    errors: list[BaseException] = []

    def run(wheels: list[Path]) -> None:
        try:
            write(wheels, site)
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=run, args=(w,)) for w in (first, second, first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    names = {r["project"][:4] for r in site_records(site)}
    assert names in ({"alph"}, {"beta"})  # one run's whole tree, never a mix
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".site.")) == [
        ".site.cuship-cache.sqlite",  # the scan cache, beside the site
        ".site.lock",
    ]


def test_describe_runs_once_per_wheel_bytes_across_runs(tmp_path: Path) -> None:
    """Adding one wheel describes one wheel; changed bytes are described again."""
    wheels = tmp_path / "wheels"
    for version in ("1.0", "1.1"):
        make_wheel(wheels, "pkg", version)
    seen: list[str] = []

    def describe(path: Path) -> Mapping[str, object]:
        seen.append(path.name)
        return {"size": path.stat().st_size}

    site = tmp_path / "site"
    write([wheels], site, describe=describe)
    assert sorted(seen) == ["pkg-1.0-py3-none-any.whl", "pkg-1.1-py3-none-any.whl"]
    seen.clear()
    make_wheel(wheels, "pkg", "1.2")
    write([wheels], site, describe=describe)
    assert seen == ["pkg-1.2-py3-none-any.whl"]
    seen.clear()
    changed = make_wheel(wheels, "pkg", "1.0", modules={"pkg": "X = 2\n"})
    write([wheels], site, describe=describe, replace_published=True)
    assert seen == [changed.name]
    sizes = {r["filename"]: r["describe"]["size"] for r in site_records(site)}
    assert sizes[changed.name] == changed.stat().st_size
