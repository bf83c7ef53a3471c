"""A hostile index (issue 16): what it serves is bounded in size and depth, its URLs stay in its
own scheme, and every field of its manifest is untrusted. No input ends in a traceback."""

from __future__ import annotations

import hashlib
import io
import json
import tracemalloc
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from cuship.errors import InputError
from cuship.events import Event
from cuship.judge.offer import Offer
from cuship.resolve import Candidate, Target, Verdict, select
from cuship.resolve.fetch import download, fetch_page, parse_json
from cuship.resolve.http import FetchOptions
from cuship.resolve.install import resolve_index
from tests.fake_index import JSON_TYPE, FakeServer, installed
from tests.wheel_factory import make_wheel

INDEX = "http://evil.test/simple"
PAGE = f"{INDEX}/pkg/"
MANIFEST = "http://evil.test/cuship-index.json"
WHEEL = "pkg-1.0+cu128-py3-none-any.whl"
SHA = "ab" * 32
MiB = 1 << 20
GPU_TARGET = Target(
    tags=("py3-none-any",), python="3.12", offer=Offer(gpus=(("H100", "9.0"),), driver_cuda="12.8")
)
QUICK = FetchOptions(timeout=1.0, retries=0)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> FakeServer:
    return installed(monkeypatch)


def _entry(url: str, sha: str = SHA, filename: str = WHEEL) -> dict[str, object]:
    return {"filename": filename, "url": url, "hashes": {"sha256": sha}}


def _verdict(candidate: Candidate) -> Verdict:
    resolution = select("pkg", [candidate], GPU_TARGET)
    (verdict,) = (*resolution.ranked, *resolution.rejected)
    return verdict


# -- size ------------------------------------------------------------------------------------------


def test_a_page_past_the_cap_is_refused_while_streaming_and_memory_stays_bounded(
    server: FakeServer,
) -> None:
    # 64 MiB of the same 64 KiB chunk, no Content-Length: only the streamed count can stop it.
    server.stream(PAGE, b" " * (64 << 10), 1024)
    options = FetchOptions(timeout=1.0, retries=0, max_page_bytes=MiB)
    tracemalloc.start()
    try:
        with pytest.raises(InputError) as caught:
            fetch_page(INDEX, "pkg", options=options)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(caught.value)
    assert PAGE in message and "larger than 1 MiB" in message
    assert caught.value.exit_code == 2
    assert server.served[PAGE] <= MiB + (64 << 10)
    assert peak < 8 * MiB


def test_a_page_announcing_2_gib_is_refused_before_its_body_is_read(server: FakeServer) -> None:
    server.stream(PAGE, b" " * (64 << 10), 32768, size=2 << 30)
    with pytest.raises(InputError, match=r"2 GiB, larger than 64 MiB") as caught:
        fetch_page(INDEX, "pkg", options=QUICK)
    assert PAGE in str(caught.value)
    assert server.served[PAGE] == 0


def test_a_2_gib_file_index_page_is_refused_without_reading_it(tmp_path: Path) -> None:
    page = tmp_path / "simple" / "pkg"
    page.mkdir(parents=True)
    with (page / "index.json").open("wb") as sparse:
        sparse.truncate(2 << 30)  # a hole: nothing is written to disk
    with pytest.raises(InputError, match="larger than 64 MiB") as caught:
        fetch_page((tmp_path / "simple").as_uri(), "pkg")
    assert caught.value.exit_code == 2
    assert "index.json" in str(caught.value) or "simple/pkg" in str(caught.value)


def test_a_manifest_past_its_cap_is_ignored_with_a_warning(server: FakeServer) -> None:
    server.json(PAGE, {"files": [_entry(f"http://evil.test/files/{WHEEL}")]})
    server.stream(MANIFEST, b" " * (64 << 10), 1024)
    events: list[Event] = []
    options = FetchOptions(timeout=1.0, retries=0, max_manifest_bytes=MiB)
    page = fetch_page(INDEX, "pkg", options=options, emit=events.append)
    assert page.manifest is None
    (only,) = page.candidates
    assert only.facts is None  # judged by its name alone
    warnings = [e.message for e in events if e.level == "warning"]
    assert any(MANIFEST in w and "larger than 1 MiB" in w for w in warnings), warnings
    assert server.served[MANIFEST] <= MiB + (64 << 10)


# -- depth and text --------------------------------------------------------------------------------


def test_a_100000_deep_json_page_is_a_clear_error(server: FakeServer) -> None:
    server.raw(PAGE, JSON_TYPE, b"[" * 100_000 + b"]" * 100_000)
    with pytest.raises(InputError, match="nested too deeply") as caught:
        fetch_page(INDEX, "pkg", options=QUICK)
    assert PAGE in str(caught.value)
    assert caught.value.exit_code == 2


def test_a_100000_deep_manifest_is_ignored_with_a_warning(server: FakeServer) -> None:
    server.json(PAGE, {"files": [_entry(f"http://evil.test/files/{WHEEL}")]})
    server.raw(
        MANIFEST, "application/json", b'{"wheels": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    )
    events: list[Event] = []
    page = fetch_page(INDEX, "pkg", options=QUICK, emit=events.append)
    assert page.manifest is None
    assert any("nested too deeply" in e.message for e in events if e.level == "warning")


def test_a_lone_surrogate_in_a_page_is_garbage_not_text() -> None:
    body = b'{"files": [{"filename": "\\ud800.whl", "url": "x", "hashes": {}}]}'
    with pytest.raises(InputError, match="lone surrogate") as caught:
        parse_json(body, PAGE)
    assert PAGE in str(caught.value)


def test_a_deeply_nested_file_entry_is_described_briefly() -> None:
    body = b'{"files": [' + b"[" * 500 + b"]" * 500 + b"]}"
    with pytest.raises(InputError, match="nested too deeply") as caught:
        parse_json(body, PAGE)
    assert len(str(caught.value)) < 400
    body = b'{"files": [' + b"[" * 40 + b"]" * 40 + b"]}"  # within the depth bound
    with pytest.raises(InputError, match=r"at files\[0\]: expected object, got \[\[\[") as caught:
        parse_json(body, PAGE)
    assert len(str(caught.value)) < 400


def test_a_yank_reason_is_kept_short_and_printable() -> None:
    entries = [
        {**_entry("a.whl", filename="a.whl"), "yanked": "x" * 1_000_000},
        {**_entry("b.whl", filename="b.whl"), "yanked": {"why": [[["deep"]]]}},
    ]
    first, second = parse_json(json.dumps({"files": entries}).encode(), PAGE)
    assert first.yanked == "x" * 200
    assert second.yanked is not None and len(second.yanked) <= 60


# -- schemes ---------------------------------------------------------------------------------------


def test_an_http_index_cannot_send_cuship_to_the_local_disk(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = make_wheel(tmp_path / "disk", "pkg", "1.0")
    sha = hashlib.sha256(local.read_bytes()).hexdigest()
    server.json(PAGE, {"files": [_entry(local.as_uri(), sha, local.name)]})

    def no_disk(*args: object, **kwargs: object) -> None:
        raise AssertionError("the local disk was read for an http index")

    monkeypatch.setattr("cuship.resolve.http._open_file", no_disk)
    target = Target(tags=("py3-none-any",), python="3.12")
    page, resolution = resolve_index("pkg", INDEX, target, options=QUICK)
    assert resolution.chosen is None
    (refused,) = resolution.rejected
    assert refused.rule == "url"
    assert "'file'" in refused.reason and "http" in refused.reason
    (candidate,) = page.candidates
    dest = tmp_path / "dest"
    with pytest.raises(InputError, match="refusing") as caught:
        download(candidate, dest)
    assert caught.value.exit_code == 2
    assert not dest.exists() or list(dest.iterdir()) == []


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "FILE:///etc/passwd",
        "ftp://evil.test/pkg.whl",
        "data:,x",
        "javascript:x",
    ],
)
def test_an_http_index_lists_only_http_files(server: FakeServer, url: str) -> None:
    server.json(PAGE, {"files": [_entry(url)]})
    (candidate,) = fetch_page(INDEX, "pkg", options=QUICK).candidates
    verdict = select("pkg", [candidate], GPU_TARGET).rejected[0]
    assert verdict.rule == "url"
    assert "http index" in verdict.reason


def test_an_html_base_tag_cannot_move_links_to_the_disk(server: FakeServer) -> None:
    body = f'<base href="file:///etc/"><a href="{WHEEL}#sha256={SHA}">{WHEEL}</a>'.encode()
    server.raw(PAGE, "text/html", body)
    (candidate,) = fetch_page(INDEX, "pkg", options=QUICK).candidates
    assert candidate.url.startswith("file:")
    assert select("pkg", [candidate], GPU_TARGET).rejected[0].rule == "url"


def test_an_http_index_may_send_files_to_https(server: FakeServer) -> None:
    server.json(PAGE, {"files": [_entry(f"https://cdn.test/{WHEEL}")]})
    (candidate,) = fetch_page(INDEX, "pkg", options=QUICK).candidates
    resolution = select("pkg", [candidate], Target(tags=("py3-none-any",), python="3.12"))
    assert resolution.chosen is not None


def test_a_file_index_may_use_files(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "files", "pkg", "1.0")
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    page = tmp_path / "simple" / "pkg"
    page.mkdir(parents=True)
    (page / "index.json").write_text(
        json.dumps({"files": [_entry(wheel.as_uri(), sha, wheel.name)]})
    )
    (candidate,) = fetch_page((tmp_path / "simple").as_uri(), "pkg").candidates
    assert select("pkg", [candidate], Target(tags=("py3-none-any",), python="3.12")).chosen
    assert download(candidate, tmp_path / "dest").read_bytes() == wheel.read_bytes()


@pytest.mark.parametrize("target", ["ftp://evil.test/pkg.whl", "file:///etc/passwd"])
def test_redirects_are_followed_only_to_http(target: str) -> None:
    from cuship.resolve.http import _HttpRedirects

    request = urllib.request.Request(PAGE)
    with pytest.raises(InputError, match="redirects to") as caught:
        _HttpRedirects().redirect_request(request, io.BytesIO(), 302, "Found", {}, target)
    assert target in str(caught.value) and caught.value.exit_code == 2
    moved = _HttpRedirects().redirect_request(request, io.BytesIO(), 302, "Found", {}, PAGE + "x")
    assert moved is not None and moved.full_url == PAGE + "x"


def test_an_index_of_another_scheme_is_refused() -> None:
    with pytest.raises(InputError, match="http, https or file") as caught:
        fetch_page("ftp://evil.test/simple", "pkg", options=QUICK)
    assert caught.value.exit_code == 2


# -- the manifest's fields -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("describe", "problem"),
    [
        ({"cuda": "abc"}, "describe.cuda 'abc' is not a version"),
        ({"cuda": 12.8}, "describe.cuda 12.8 is not a string"),
        ({"cuda": "12.8", "torch": ["2.8"]}, "describe.torch ['2.8'] is not a string"),
        ({"cuda": "12.8", "torch": "2.x"}, "describe.torch '2.x' is not a version"),
        ({"cuda": "12.8", "torch_built": "latest"}, "describe.torch_built 'latest'"),
        ({"cuda": "12.8", "sass": "90"}, "describe.sass '90' is not a list"),
        ({"cuda": "12.8", "sass": [90]}, "describe.sass[0] 90 is not a string"),
        ({"cuda": "12.8", "ptx": ["sm_9000x"]}, "describe.ptx[0] 'sm_9000x' is not an arch"),
        ({"cuda": "12.8", "sass": ["90"] * 1000}, "describe.sass holds 1000 items"),
        ({"cuda": "12.8", "cxx11abi": "yes"}, "describe.cxx11abi 'yes' is not true or false"),
        ({"cuda": "12.8", "torch_abi": "weird"}, "describe.torch_abi 'weird' is not one of"),
        ({"cuda": "12.8", "torch_requirement": 5}, "describe.torch_requirement 5 is not a string"),
        ({"cuda": "12.8", "torch_requirement": "torch>>>2"}, "not a requirement"),
        ({"cuda": "9" * 5000}, "describe.cuda"),
        (["cuda", "12.8"], "'describe' is a list, not a table"),
    ],
)
def test_every_manifest_field_is_untrusted(
    server: FakeServer, describe: object, problem: str
) -> None:
    server.json(PAGE, {"files": [_entry(f"http://evil.test/files/{WHEEL}")]})
    server.json(MANIFEST, {"wheels": [{"filename": WHEEL, "sha256": SHA, "describe": describe}]})
    page = fetch_page(INDEX, "pkg", options=QUICK)
    (candidate,) = page.candidates
    assert candidate.facts is None  # the record is ignored ...
    verdict = _verdict(candidate)
    (note,) = [n for n in verdict.notes if n.startswith("manifest record ignored")]
    assert problem in note  # ... with a note saying why
    assert len(note) < 300
    assert verdict.rule == "ok"  # judged by its label: cu128 runs on a CUDA 12.8 driver


@pytest.mark.parametrize(
    "document",
    [[1, 2], {"wheels": "all"}, {"wheels": {"filename": WHEEL}}, "text", None],
)
def test_a_manifest_of_the_wrong_shape_is_ignored_with_a_warning(
    server: FakeServer, document: object
) -> None:
    server.json(PAGE, {"files": [_entry(f"http://evil.test/files/{WHEEL}")]})
    server.json(MANIFEST, document)
    events: list[Event] = []
    page = fetch_page(INDEX, "pkg", options=QUICK, emit=events.append)
    assert page.manifest is None
    (candidate,) = page.candidates
    assert candidate.facts is None
    warnings = [e.message for e in events if e.level == "warning"]
    assert any(MANIFEST in w and "ignoring" in w for w in warnings), warnings
    assert _verdict(candidate).accepted


def test_records_without_a_filename_are_skipped_and_the_rest_still_count(
    server: FakeServer,
) -> None:
    server.json(PAGE, {"files": [_entry(f"http://evil.test/files/{WHEEL}")]})
    good = {"filename": WHEEL, "sha256": SHA, "describe": {"cuda": "12.8", "sass": ["90"]}}
    server.json(MANIFEST, {"wheels": [{"filename": ["x"]}, {"describe": {}}, 7, None, good]})
    (candidate,) = fetch_page(INDEX, "pkg", options=QUICK).candidates
    assert candidate.facts is not None
    assert (candidate.facts.cuda, candidate.facts.sass) == ("12.8", ("90",))
    assert _verdict(candidate).coverage == "sass"


def test_an_odd_hash_or_size_is_not_trusted(server: FakeServer, tmp_path: Path) -> None:
    entry = {**_entry(f"http://evil.test/files/{WHEEL}", "not-a-hash"), "size": "big"}
    server.json(PAGE, {"files": [entry]})
    (candidate,) = fetch_page(INDEX, "pkg", options=QUICK).candidates
    assert (candidate.sha256, candidate.size) == (None, None)
    with pytest.raises(InputError, match="no sha256"):
        download(candidate, tmp_path / "dest")


def test_the_cli_says_why_an_http_index_may_not_use_a_local_file(
    server: FakeServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from cuship.cli import main

    server.json(PAGE, {"files": [_entry("file:///etc/passwd", SHA, "pkg-1.0-py3-none-any.whl")]})
    for name in ("CUSHIP_GPUS", "CUSHIP_TORCH", "CUSHIP_NVCC"):
        monkeypatch.setenv(name, "none")
    code = main(["resolve", "pkg", "--index", INDEX, "--json", "--retries", "0"])
    captured = capsys.readouterr()
    assert code == 1, captured.err
    (row,) = json.loads(captured.out)["rejected"]
    assert row["rule"] == "url" and "'file:///etc/passwd'" in row["reason"]
    assert "1 rejected (url)" in captured.err
    assert "Traceback" not in captured.err
