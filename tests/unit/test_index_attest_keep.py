"""`cuship index`: attestations beside wheels are published and linked; --keep-existing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from cuship.attest import (
    CHECK_PREDICATE,
    attest,
    attestation_path,
    keygen,
    load_signing_key,
    write_envelope,
)
from cuship.cli import main
from cuship.docs.documents import schema_file
from cuship.errors import InputError
from cuship.events import Event, collect
from cuship.index import attached, site_records, write
from tests.jsondocs import schema_errors
from tests.wheel_factory import make_wheel


def _records(site: Path) -> dict[str, dict[str, Any]]:
    return {r["filename"]: dict(r) for r in site_records(site)}


def _attest(wheel: Path, key_dir: Path) -> Path:
    private = key_dir / "key"
    if not private.exists():
        keygen(private)
    envelope = attest(
        [wheel], load_signing_key(private), predicate_type=CHECK_PREDICATE, predicate={}
    )
    return write_envelope(envelope, attestation_path(wheel))


def test_an_attestation_beside_a_wheel_is_published_and_linked(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheel = make_wheel(wheels, "demo", "1.0+cu128")
    plain = make_wheel(wheels, "demo", "0.9")
    envelope = _attest(wheel, tmp_path)
    events: list[Event] = []
    write([wheels], tmp_path / "site", emit=collect(events))
    assert not [e for e in events if e.level == "warning"]  # the .jsonl is not "not a wheel"
    site = tmp_path / "site"
    published = site / "files" / envelope.name
    assert published.read_bytes() == envelope.read_bytes()
    record = _records(site)[wheel.name]["attestation"]
    assert record == {
        "url": "../../files/demo-1.0%2Bcu128-py3-none-any.whl.intoto.jsonl",
        "sha256": hashlib.sha256(envelope.read_bytes()).hexdigest(),
    }
    assert _records(site)[plain.name]["attestation"] is None
    page = (site / "simple" / "demo" / "index.html").read_text()
    assert '<a href="../../files/demo-1.0%2Bcu128-py3-none-any.whl.intoto.jsonl">' in page
    assert page.count(">attestation</a>") == 1
    assert "data-provenance" not in page
    variant_page = (site / "cu128" / "simple" / "demo" / "index.html").read_text()
    assert "../../../files/demo-1.0%2Bcu128-py3-none-any.whl.intoto.jsonl" in variant_page


def test_attestations_come_from_the_scans_listing_of_a_folder_however_it_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder of wheels is listed once, by the scan, and that listing names the
    attestations: find_attestations lists no folder again, whether the folder was given
    relative, with a trailing slash or absolute."""
    wheels = tmp_path / "wheels"
    wheel = make_wheel(wheels, "demo", "1.0")
    make_wheel(wheels, "other", "1.0")
    _attest(wheel, tmp_path)
    monkeypatch.chdir(tmp_path)
    listed_again: list[str] = []
    names = attached._names

    def listing(folder: str) -> frozenset[str] | None:
        listed_again.append(folder)
        return names(folder)

    monkeypatch.setattr(attached, "_names", listing)
    for i, given in enumerate(["wheels", "./wheels/", str(wheels)]):
        site = tmp_path / f"site-{i}"
        write([Path(given)], site)
        assert _records(site)[wheel.name]["attestation"] is not None, given
        assert (site / "files" / attestation_path(wheel).name).is_file()
    assert listed_again == []
    write([wheel], tmp_path / "site-file")  # a wheel given by itself: its folder is listed
    assert _records(tmp_path / "site-file")[wheel.name]["attestation"] is not None
    assert listed_again == [str(wheels)]


def test_a_stale_attestation_is_not_linked_and_says_why(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheel = make_wheel(wheels, "demo", "1.0")
    envelope = _attest(wheel, tmp_path)
    wheel.unlink()
    make_wheel(wheels, "demo", "1.0", modules={"demo": "REBUILT = True\n"})
    events: list[Event] = []
    write([wheels], tmp_path / "site", emit=collect(events))
    (warning,) = [e.message for e in events if e.level == "warning"]
    assert warning.startswith(f"not linking {str(envelope)!r}: its statement does not name")
    assert _records(tmp_path / "site")[wheel.name]["attestation"] is None
    assert not (tmp_path / "site" / "files" / envelope.name).exists()


def test_keep_existing_keeps_earlier_releases_at_their_own_urls(tmp_path: Path) -> None:
    site = tmp_path / "site"
    one = make_wheel(tmp_path / "r1", "demo", "1.0")
    _attest(one, tmp_path)
    write([one], site, base_url="https://example.org/download/v1")
    two = make_wheel(tmp_path / "r2", "demo", "2.0")
    summary = write([two], site, base_url="https://example.org/download/v2", keep_existing=True)
    assert (summary.wheels, summary.kept) == (2, 1)
    records = _records(site)
    assert records[one.name]["url"] == f"https://example.org/download/v1/{one.name}"
    assert records[one.name]["attestation"]["url"] == (
        f"https://example.org/download/v1/{one.name}.intoto.jsonl"
    )
    assert records[two.name]["url"] == f"https://example.org/download/v2/{two.name}"
    assert (site / "files" / f"{one.name}.metadata").is_file()
    project = json.loads((site / "simple" / "demo" / "index.json").read_text())
    assert project["versions"] == ["1.0", "2.0"]
    # Without the flag the index holds only what it is given, as before.
    write([two], site, base_url="https://example.org/download/v2")
    assert list(_records(site)) == [two.name]


def test_keep_existing_carries_wheels_inside_the_site_and_a_new_file_replaces_its_name(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    one = make_wheel(tmp_path / "r1", "demo", "1.0")
    envelope = _attest(one, tmp_path)
    write([one], site)
    one.unlink()  # the release-1 wheel now lives only in the site
    envelope.unlink()
    two = make_wheel(tmp_path / "r2", "demo", "2.0")
    write([two], site, keep_existing=True)
    assert (site / "files" / one.name).is_file()
    assert (site / "files" / f"{one.name}.intoto.jsonl").is_file()
    assert _records(site)[one.name]["url"] == f"../../files/{one.name}"
    rebuilt = make_wheel(tmp_path / "r3", "demo", "2.0", modules={"demo": "X = 1\n"})
    published = _records(site)
    with pytest.raises(InputError, match="would change the bytes of the published file"):
        write([rebuilt], site, keep_existing=True)
    assert _records(site) == published, "refused before anything was written"
    events: list[Event] = []
    write([rebuilt], site, keep_existing=True, replace_published=True, emit=collect(events))
    assert any("replaces the published file" in e.message for e in events if e.level == "warning")
    records = _records(site)
    assert sorted(records) == sorted([one.name, two.name])
    assert records[two.name]["sha256"] == hashlib.sha256(rebuilt.read_bytes()).hexdigest()


def test_keep_existing_refuses_a_site_whose_kept_files_are_gone(tmp_path: Path) -> None:
    site = tmp_path / "site"
    one = make_wheel(tmp_path / "r1", "demo", "1.0")
    write([one], site)
    (site / "files" / one.name).unlink()
    two = make_wheel(tmp_path / "r2", "demo", "2.0")
    with pytest.raises(InputError, match=r"lists 'demo-1\.0-py3-none-any\.whl' in the site"):
        write([two], site, keep_existing=True)
    assert list(_records(site)) == [one.name]  # the old index is untouched


def test_cli_keep_existing_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = tmp_path / "site"
    one = make_wheel(tmp_path / "r1", "demo", "1.0")
    two = make_wheel(tmp_path / "r2", "demo", "2.0")
    assert main(["index", str(one), "-o", str(site)]) == 0
    capsys.readouterr()
    assert main(["index", str(two), "-o", str(site), "--keep-existing", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["wheels"], summary["kept"]) == (2, 1)
    assert schema_errors(schema_file("index"), summary) == []
