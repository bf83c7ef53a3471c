"""benchmarks/_floor.py, the one floor of an index run: a plan learnt from a site cuship wrote,
redone with plain calls (the same folders, files and links; the wheels read and hashed)."""

from __future__ import annotations

import os
from pathlib import Path

from benchmarks import _floor
from benchmarks._index_scale import WheelSpec, write_wheel


def _tree(root: Path) -> dict[str, bytes | int]:
    """Each file under ``root``: its bytes, or a linked wheel's inode."""
    found: dict[str, bytes | int] = {}
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = Path(folder, name)
            rel = str(path.relative_to(root))
            found[rel] = path.stat().st_ino if name.endswith(".whl") else path.read_bytes()
    return found


def _site(tmp_path: Path) -> tuple[Path, Path]:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    wheel = write_wheel(wheels, WheelSpec("p", "1.0"), b"w" * 100)
    site = tmp_path / "site"
    (site / "simple" / "p").mkdir(parents=True)
    (site / "files").mkdir()
    (site / "simple" / "p" / "index.html").write_bytes(b"<a>p</a>")
    (site / "index.html").write_bytes(b"top")
    (site / "files" / wheel.name).hardlink_to(wheel)
    return wheels, site


def test_a_cold_floor_writes_the_same_tree_and_links_the_wheels(tmp_path: Path) -> None:
    wheels, site = _site(tmp_path)
    found = sorted(wheels.glob("*.whl"))
    plan = _floor.cold_plan(site, found, tmp_path / "floor", given=[str(wheels)])
    assert [len(members) for _path, members in plan["wheels"]] == [2]  # METADATA, RECORD
    (tmp_path / "floor").mkdir()
    _floor.run(plan)
    assert _tree(tmp_path / "floor") == _tree(site)
    assert plan["folders"] == ["files", "simple", "simple/p"]


def test_an_update_floor_writes_what_the_update_wrote(tmp_path: Path) -> None:
    wheels, site = _site(tmp_path)
    (site / "cuship-index.json").write_bytes(b"{}")
    (site / "simple" / "p" / "cuship.json").write_bytes(b"{}")
    copy = tmp_path / "copy"
    copy.mkdir()
    for rel, data in _tree(site).items():  # the site before, as the floor starts from it
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith(".whl"):
            (copy / rel).hardlink_to(site / rel)
        else:
            assert isinstance(data, bytes)
            (copy / rel).write_bytes(data)
    before = _floor.snapshot(site)
    new = write_wheel(wheels, WheelSpec("p", "2.0"), b"n" * 100)
    (site / "files" / new.name).hardlink_to(new)  # what an update does
    (site / "simple" / "p" / "index.html").unlink()
    (site / "simple" / "p" / "index.html").write_bytes(b"<a>p</a><a>p2</a>")
    plan = _floor.update_plan(before, site, [new], copy, projects=["p"])
    assert [rel for rel, _data in plan["files"]] == ["simple/p/index.html"]
    assert [rel for _source, rel in plan["links"]] == [f"files/{new.name}"]
    assert plan["read"] == [f"{copy}/cuship-index.json", f"{copy}/simple/p/cuship.json"]
    _floor.run(plan)
    assert _tree(copy) == _tree(site)


def test_a_rerun_floor_states_the_folder_and_writes_nothing(tmp_path: Path) -> None:
    wheels, _site_path = _site(tmp_path)
    plan = _floor.rerun_plan([wheels])
    assert (plan["stat"], plan["wheels"], plan["files"], plan["dest"]) == (
        [str(wheels)],
        [],
        [],
        "",
    )
    _floor.run(plan)
