"""Reading simple pages (HTML and JSON), the manifest, and hash-verified downloads over file://."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from cuship.errors import CheckFailed, InputError
from cuship.events import Event
from cuship.index import write
from cuship.resolve import Candidate, fetch
from cuship.resolve.fetch import (
    download,
    fetch_page,
    manifest_urls,
    parse_html,
    parse_json,
    project_url,
)
from tests.wheel_factory import make_wheel

PAGE = "http://host/simple/pkg/"
SHA = "ab" * 32


def test_html_anchors_fragments_and_attributes() -> None:
    body = f"""<!DOCTYPE html><html><body>
    <a href="../../files/pkg-1.0%2Bcu128-py3-none-any.whl#sha256={SHA.upper()}"
       data-requires-python="&gt;=3.10,&lt;4">pkg-1.0+cu128-py3-none-any.whl</a>
    <a href="https://elsewhere/pkg-0.9-py3-none-any.whl" data-yanked>pkg-0.9-py3-none-any.whl</a>
    <a href="pkg-0.8-py3-none-any.whl#md5=00" data-yanked="bad &amp; broken"></a>
    <a name="no-href">nothing</a>
    </body></html>""".encode()
    first, second, third = parse_html(body, PAGE)
    assert first.url == "http://host/files/pkg-1.0%2Bcu128-py3-none-any.whl"
    assert first.sha256 == SHA
    assert first.requires_python == ">=3.10,<4"
    assert first.yanked is None
    assert (second.url, second.sha256, second.yanked) == (
        "https://elsewhere/pkg-0.9-py3-none-any.whl",
        None,
        "",
    )
    assert third.filename == "pkg-0.8-py3-none-any.whl"  # from the href when the text is empty
    assert (third.sha256, third.yanked) == (None, "bad & broken")


def test_html_markup_in_names_comes_back_as_plain_text() -> None:
    body = (
        b'<script>document.write("<a href=evil.whl>evil.whl</a>")</script>'
        b'<a href="x.whl">&lt;script&gt;alert(1)&lt;/script&gt;</a>'
    )
    (only,) = parse_html(body, PAGE)
    assert only.filename == "<script>alert(1)</script>"
    assert only.url == "http://host/simple/pkg/x.whl"


def test_html_that_is_not_text_is_garbage() -> None:
    with pytest.raises(InputError, match="garbage for 'http://host/simple/pkg/'"):
        parse_html(b"\xff\xfe\x00junk", PAGE)


def test_json_files() -> None:
    document = {
        "meta": {"api-version": "1.1"},
        "name": "pkg",
        "files": [
            {
                "filename": "pkg-1.0-py3-none-any.whl",
                "url": "../../files/pkg-1.0-py3-none-any.whl",
                "hashes": {"sha256": SHA},
                "requires-python": ">=3.10",
                "size": 10,
                "yanked": False,
            },
            {"filename": "pkg-0.9.tar.gz", "url": "x", "hashes": {}, "yanked": "why"},
            {"filename": "pkg-0.8.tar.gz", "url": "y", "hashes": {}, "yanked": True},
        ],
    }
    first, second, third = parse_json(json.dumps(document).encode(), PAGE)
    assert first == Candidate(
        filename="pkg-1.0-py3-none-any.whl",
        url="http://host/files/pkg-1.0-py3-none-any.whl",
        sha256=SHA,
        requires_python=">=3.10",
        size=10,
    )
    assert (second.yanked, third.yanked, second.sha256) == ("why", "", None)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"<html>", "not JSON"),
        (b"[1, 2]", "without a 'files' list"),
        (b'{"files": [{"url": "x"}]}', r"at files\[0\]: no 'filename'"),
        (b'{"files": [{"filename": "a.whl"}]}', r"at files\[0\]: no 'url'"),
    ],
)
def test_json_garbage(body: bytes, problem: str) -> None:
    with pytest.raises(InputError, match=problem) as caught:
        parse_json(body, PAGE)
    assert PAGE in str(caught.value)


def test_where_the_manifest_may_be() -> None:
    assert project_url("http://h/simple", "My_Pkg") == "http://h/simple/my-pkg/"
    assert manifest_urls("http://h/simple/") == ("http://h/cuship-index.json",)
    assert manifest_urls("http://h/cu128/simple") == (
        "http://h/cu128/cuship-index.json",
        "http://h/cuship-index.json",
    )
    assert manifest_urls("ftp://h/simple") == ()


def _site(tmp_path: Path) -> Path:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "pkg", "1.0+cu128", tag="cp311-cp311-linux_x86_64")
    make_wheel(wheels, "pkg", "1.0", requires_python=">=3.10")

    def describe(path: Path) -> Mapping[str, object]:
        if "cu128" in path.name:
            return {"label": "cu128", "cuda": "12.8", "sass": ["80", "90a"], "ptx": ["120"]}
        return {}

    site = tmp_path / "site"
    write([wheels], site, describe=describe)
    return site


def test_fetch_page_reads_a_written_index_and_its_manifest(tmp_path: Path) -> None:
    site = _site(tmp_path)
    for index in (site / "simple", site / "cu128" / "simple"):
        page = fetch_page(index.as_uri(), "PKG")
        assert page.format == "json"
        assert page.manifest == (site / "simple" / "pkg" / "cuship.json").as_uri()
        by_name = {c.filename: c for c in page.candidates}
        labelled = by_name["pkg-1.0+cu128-cp311-cp311-linux_x86_64.whl"]
        assert labelled.facts is not None
        assert (labelled.facts.cuda, labelled.facts.sass, labelled.facts.ptx) == (
            "12.8",
            ("80", "90a"),
            ("120",),
        )
        if index == site / "simple":
            plain = by_name["pkg-1.0-py3-none-any.whl"]
            assert (plain.facts, plain.requires_python) == (None, ">=3.10")


def test_fetch_page_of_an_unknown_project_names_the_url(tmp_path: Path) -> None:
    site = _site(tmp_path)
    with pytest.raises(InputError, match="does not exist") as caught:
        fetch_page((site / "simple").as_uri(), "nope")
    assert "simple/nope/" in str(caught.value)
    assert caught.value.exit_code == 2


def test_download_verifies_and_renames(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "src", "pkg", "1.0")
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    good = Candidate(filename=wheel.name, url=wheel.as_uri(), sha256=sha)
    dest = tmp_path / "dest"
    got = download(good, dest)
    assert got == dest / wheel.name and got.read_bytes() == wheel.read_bytes()
    assert download(good, dest) == got  # verified copy reused
    assert sorted(p.name for p in dest.iterdir()) == [wheel.name]


def test_a_large_download_is_told_by_megabytes_as_it_goes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fetch, "TOLD_FROM", 2_000_000)
    big = tmp_path / "src" / "big-1.0-py3-none-any.whl"
    big.parent.mkdir()
    big.write_bytes(bytes(2_500_000))  # read 1 MiB at a time: three reads
    sha = hashlib.sha256(big.read_bytes()).hexdigest()
    events: list[Event] = []
    candidate = Candidate(filename=big.name, url=big.as_uri(), sha256=sha, size=2_500_000)
    download(candidate, tmp_path / "dest", emit=events.append)
    told = [e.message for e in events if e.level == "progress"]
    assert told == [f"[download {n}/3] {big.name}: MiB" for n in (1, 2, 3)]
    assert all(e.topic == "fetch" for e in events if e.level == "progress")
    events.clear()
    download(candidate, tmp_path / "quiet", emit=events.append, quiet=True)  # told by its caller
    small = Candidate(filename=big.name, url=big.as_uri(), sha256=sha, size=None)
    download(small, tmp_path / "unsized", emit=events.append)  # no size: none told as it goes
    assert [e for e in events if e.level == "progress"] == []


def test_download_refuses_a_mismatch_and_leaves_nothing(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "src", "pkg", "1.0")
    bad = Candidate(filename=wheel.name, url=wheel.as_uri(), sha256="0" * 64)
    dest = tmp_path / "dest"
    with pytest.raises(CheckFailed, match="sha256 mismatch") as caught:
        download(bad, dest)
    assert caught.value.exit_code == 1
    assert list(dest.iterdir()) == []


@pytest.mark.parametrize(
    ("filename", "sha", "problem"),
    [
        ("../evil.whl", SHA, "not a plain file name"),
        (".hidden.whl", SHA, "not a plain file name"),
        ("pkg-1.0-py3-none-any.whl", None, "no sha256"),
    ],
)
def test_download_refuses_unsafe_or_unverifiable_files(
    tmp_path: Path, filename: str, sha: str | None, problem: str
) -> None:
    with pytest.raises(InputError, match=problem):
        download(Candidate(filename=filename, url="file:///x", sha256=sha), tmp_path)
