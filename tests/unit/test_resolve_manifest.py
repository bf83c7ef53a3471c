"""Where resolve finds a project's cuship facts: the manifest its JSON page names, cuship.json
beside an HTML page, or the site manifest (schema 1 with every record, schema 2 with a map of
per-project manifests). A resolve on a schema 2 site reads one project's page and manifest and
nothing else; a manifest it cannot use is a warning, and the files are judged by name alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cuship.events import Event
from cuship.judge.offer import Offer
from cuship.resolve import Target, select
from cuship.resolve.fetch import IndexPage, fetch_page
from cuship.resolve.http import FetchOptions
from cuship.resolve.install import resolve_index
from tests.fake_index import FakeServer, installed

HOST = "http://cdn.test/"
INDEX = f"{HOST}simple"
PAGE = f"{INDEX}/pkg/"
VARIANT_PAGE = f"{HOST}cu128/simple/pkg/"
PROJECT_MANIFEST = f"{PAGE}cuship.json"
SITE_MANIFEST = f"{HOST}cuship-index.json"
WHEEL = "pkg-1.0+cu128-py3-none-any.whl"
SHA = "cd" * 32
QUICK = FetchOptions(timeout=1.0, retries=0)
TARGET = Target(
    tags=("py3-none-any",),
    python="3.12",
    offer=Offer(gpus=(("H100", "9.0"),), driver_cuda="12.8"),
)
FACTS = {"label": "cu128", "cuda": "12.8", "sass": ["80", "90"], "ptx": []}


def _record(filename: str = WHEEL, **extra: object) -> dict[str, object]:
    """A record as the index writer lays it out, its URL relative to the manifest."""
    return {
        "filename": filename,
        "project": "pkg",
        "version": "1.0+cu128",
        "local": "cu128",
        "tags": ["py3-none-any"],
        "sha256": SHA,
        "size": 10,
        "requires_python": None,
        "metadata_sha256": None,
        "url": f"../../files/{filename.replace('+', '%2B')}",
        "yanked": None,
        "describe": FACTS,
        "attestation": None,
        **extra,
    }


def _project(name: str = "pkg", count: int = 0) -> dict[str, object]:
    """A project's manifest: pkg's one record, or ``count`` records of another project."""
    wheels = [_record(f"{name}-1.{n}-py3-none-any.whl", project=name) for n in range(count)]
    return {"schema": "cuship-project/1", "project": name, "wheels": wheels or [_record()]}


def _page(manifest: str | None = None) -> dict[str, object]:
    entry = {"filename": WHEEL, "url": f"../../files/{WHEEL}", "hashes": {"sha256": SHA}}
    page: dict[str, object] = {"meta": {"api-version": "1.1"}, "name": "pkg", "files": [entry]}
    if manifest is not None:
        page["_cuship"] = {"manifest": manifest}
    return page


def _html() -> bytes:
    return f'<a href="../../files/{WHEEL}#sha256={SHA}">{WHEEL}</a>'.encode()


def _site_v2(*projects: str) -> dict[str, object]:
    return {
        "schema": "cuship-index/2",
        "generator": "cuship test",
        "base_url": None,
        "indexes": {"": "simple/", "cu128": "cu128/simple/"},
        "projects": {
            name: {"manifest": f"simple/{name}/cuship.json", "labels": ["cu128"]}
            for name in projects
        },
    }


def _has_facts(page: IndexPage) -> bool:
    (candidate,) = page.candidates
    return candidate.facts is not None and candidate.facts.sass == ("80", "90")


def _warnings(events: list[Event]) -> list[str]:
    return [e.message for e in events if e.level == "warning"]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> FakeServer:
    return installed(monkeypatch)


@pytest.fixture
def no_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the local disk was read for an http index")

    monkeypatch.setattr("cuship.resolve.http._open_file", refuse)


@pytest.fixture
def v2(server: FakeServer) -> FakeServer:
    """A schema 2 site: pages naming their manifest, a thin site manifest, other projects."""
    server.json(PAGE, _page("cuship.json"))
    server.json(VARIANT_PAGE, _page("../../../simple/pkg/cuship.json"))
    server.manifest(PROJECT_MANIFEST, _project())
    server.manifest(SITE_MANIFEST, _site_v2("pkg", "other", "big"))
    server.manifest(f"{INDEX}/other/cuship.json", _project("other", 10))
    server.manifest(f"{INDEX}/big/cuship.json", _project("big", 1000))
    return server


# -- 1. the manifest a JSON page names -------------------------------------------------------------


@pytest.mark.parametrize(
    ("index", "page_url"), [(INDEX, PAGE), (f"{HOST}cu128/simple", VARIANT_PAGE)]
)
def test_a_v2_resolve_reads_only_the_page_and_that_projects_manifest(
    v2: FakeServer, index: str, page_url: str
) -> None:
    page, resolution = resolve_index("pkg", index, TARGET, options=QUICK)
    assert v2.requests == [page_url, PROJECT_MANIFEST]
    assert page.manifest == PROJECT_MANIFEST
    assert _has_facts(page)
    assert resolution.chosen is not None and resolution.chosen.coverage == "sass"


def test_records_count_by_file_name_and_their_urls_are_not_followed(v2: FakeServer) -> None:
    v2.manifest(PROJECT_MANIFEST, {**_project(), "wheels": [_record(url="file:///etc/passwd")]})
    page = fetch_page(INDEX, "pkg", options=QUICK)
    (candidate,) = page.candidates
    assert candidate.url == f"{HOST}files/{WHEEL}"  # the page's link, not the record's
    assert _has_facts(page) and candidate.refused is None


def test_a_file_site_written_by_hand_in_the_v2_layout(tmp_path: Path) -> None:
    site = tmp_path / "site"
    for folder, href in (
        (site / "simple" / "pkg", "cuship.json"),
        (site / "cu128" / "simple" / "pkg", "../../../simple/pkg/cuship.json"),
    ):
        folder.mkdir(parents=True)
        (folder / "index.json").write_text(json.dumps(_page(href)))
        (folder / "index.html").write_bytes(_html())
    (site / "simple" / "pkg" / "cuship.json").write_text(json.dumps(_project()))
    (site / "cuship-index.json").write_text(json.dumps(_site_v2("pkg")))
    for index in (site / "simple", site / "cu128" / "simple"):
        page = fetch_page(index.as_uri(), "pkg")
        assert (page.format, page.manifest) == (
            "json",
            (site / "simple" / "pkg" / "cuship.json").as_uri(),
        )
        assert _has_facts(page)


# -- 2. cuship.json beside an HTML page ------------------------------------------------------------


def test_an_html_page_finds_cuship_json_beside_it(server: FakeServer) -> None:
    server.raw(PAGE, "text/html", _html())
    server.manifest(PROJECT_MANIFEST, _project())
    server.manifest(SITE_MANIFEST, _site_v2("pkg"))
    page = fetch_page(INDEX, "pkg", options=QUICK)
    assert server.requests == [PAGE, PROJECT_MANIFEST]
    assert (page.format, page.manifest) == ("html", PROJECT_MANIFEST)
    assert _has_facts(page)


def test_an_html_file_page_finds_cuship_json_beside_it(tmp_path: Path) -> None:
    folder = tmp_path / "simple" / "pkg"
    folder.mkdir(parents=True)
    (folder / "index.html").write_bytes(_html())
    (folder / "cuship.json").write_text(json.dumps(_project()))
    page = fetch_page((tmp_path / "simple").as_uri(), "pkg")
    assert (page.format, page.manifest) == ("html", (folder / "cuship.json").as_uri())
    assert _has_facts(page)


# -- 3. the site manifest --------------------------------------------------------------------------


def test_an_html_sub_index_page_reaches_the_project_manifest_through_the_site_map(
    server: FakeServer,
) -> None:
    server.raw(VARIANT_PAGE, "text/html", _html())
    server.manifest(PROJECT_MANIFEST, _project())
    server.manifest(SITE_MANIFEST, _site_v2("pkg"))
    page = fetch_page(f"{HOST}cu128/simple", "pkg", options=QUICK)
    assert server.requests == [
        VARIANT_PAGE,
        f"{VARIANT_PAGE}cuship.json",  # 404: moves on
        f"{HOST}cu128/cuship-index.json",  # 404: moves on
        SITE_MANIFEST,
        PROJECT_MANIFEST,  # relative to the site manifest
    ]
    assert page.manifest == PROJECT_MANIFEST and _has_facts(page)


@pytest.mark.parametrize("page_type", ["json", "html"])
def test_a_v1_site_manifest_still_gives_its_facts(server: FakeServer, page_type: str) -> None:
    if page_type == "json":
        server.json(PAGE, _page())
    else:
        server.raw(PAGE, "text/html", _html())
    site = {"schema": "cuship-index/1", "wheels": [_record(url=f"files/{WHEEL}")]}
    server.manifest(SITE_MANIFEST, site)
    page = fetch_page(INDEX, "pkg", options=QUICK)
    assert page.manifest == SITE_MANIFEST and _has_facts(page)
    beside = [PROJECT_MANIFEST] if page_type == "html" else []  # a JSON page would have named it
    assert server.requests == [PAGE, *beside, SITE_MANIFEST]


def test_a_project_the_v2_map_does_not_list_has_no_facts(server: FakeServer) -> None:
    server.json(PAGE, _page())
    server.manifest(SITE_MANIFEST, _site_v2("other"))
    events: list[Event] = []
    page = fetch_page(INDEX, "pkg", options=QUICK, emit=events.append)
    assert page.manifest is None and not _has_facts(page)
    assert server.requests == [PAGE, SITE_MANIFEST]
    assert _warnings(events) == []


def test_a_site_without_any_manifest_resolves_by_names(server: FakeServer) -> None:
    server.json(PAGE, _page())
    page, resolution = resolve_index("pkg", INDEX, TARGET, options=QUICK)
    assert page.manifest is None and resolution.chosen is not None
    assert server.requests == [PAGE, SITE_MANIFEST]


@pytest.mark.parametrize(
    "entry", [{"manifest": 7}, {"manifest": ""}, "simple/pkg/cuship.json", ["x"]]
)
def test_a_v2_map_entry_naming_no_manifest_is_ignored_with_a_warning(
    server: FakeServer, entry: object
) -> None:
    server.json(PAGE, _page())
    server.manifest(SITE_MANIFEST, {**_site_v2(), "projects": {"pkg": entry}})
    events: list[Event] = []
    page = fetch_page(INDEX, "pkg", options=QUICK, emit=events.append)
    assert page.manifest is None
    (warning,) = _warnings(events)
    assert SITE_MANIFEST in warning and "'pkg' names no manifest" in warning


# -- what cannot be used ---------------------------------------------------------------------------


BROKEN: list[tuple[object, str]] = [
    (b"\x00 not json {", "Expecting value"),
    (b'{"wheels": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply"),
    (
        {"schema": "cuship-project/1", "wheels": "all"},
        "the document at wheels: expected array, got 'all'",
    ),
    ([_record()], "the document: expected object, got [{"),
    ({**_project(), "project": "Other_Pkg"}, "describes the project 'Other_Pkg', not 'pkg'"),
    (None, "404 Not Found"),  # the page promised it
    (b" " * (2 << 20), "larger than 1 MiB"),
]


@pytest.mark.parametrize(("body", "problem"), BROKEN)
def test_a_broken_project_manifest_is_ignored_and_the_files_judged_by_name(
    server: FakeServer, body: object, problem: str
) -> None:
    server.json(PAGE, _page("cuship.json"))
    if isinstance(body, bytes):
        server.raw(PROJECT_MANIFEST, "application/json", body)
    elif body is not None:
        server.manifest(PROJECT_MANIFEST, body)
    server.manifest(SITE_MANIFEST, {"wheels": [_record()]})  # never asked for
    events: list[Event] = []
    options = FetchOptions(timeout=1.0, retries=0, max_manifest_bytes=1 << 20)
    page = fetch_page(INDEX, "pkg", options=options, emit=events.append)
    assert page.manifest is None and not _has_facts(page)
    (warning,) = _warnings(events)
    assert f"ignoring the cuship manifest at {PROJECT_MANIFEST!r}" in warning
    assert problem in warning
    assert server.requests == [PAGE, PROJECT_MANIFEST]
    (candidate,) = page.candidates
    assert select("pkg", [candidate], TARGET).chosen is not None  # by its +cu128 label


def test_a_broken_site_map_entry_target_is_ignored_with_a_warning(server: FakeServer) -> None:
    server.json(PAGE, _page())
    server.manifest(SITE_MANIFEST, _site_v2("pkg"))
    server.raw(PROJECT_MANIFEST, "application/json", b"{")
    events: list[Event] = []
    page = fetch_page(INDEX, "pkg", options=QUICK, emit=events.append)
    assert page.manifest is None
    (warning,) = _warnings(events)
    assert repr(PROJECT_MANIFEST) in warning


@pytest.mark.usefixtures("no_disk")
@pytest.mark.parametrize("href", ["file:///etc/passwd", "ftp://cdn.test/pkg.json", "data:,{}"])
def test_an_http_index_cannot_point_its_manifest_outside_http(
    server: FakeServer, href: str
) -> None:
    server.json(PAGE, _page(href))
    events: list[Event] = []
    page = fetch_page(INDEX, "pkg", options=QUICK, emit=events.append)
    assert page.manifest is None
    (warning,) = _warnings(events)
    assert "http index may link only http or https manifests" in warning and "refused" in warning
    assert server.requests == [PAGE]


@pytest.mark.usefixtures("no_disk")
def test_a_v2_site_map_cannot_point_outside_http_either(server: FakeServer) -> None:
    server.json(PAGE, _page())
    server.manifest(SITE_MANIFEST, {**_site_v2(), "projects": {"pkg": {"manifest": "file:///x"}}})
    events: list[Event] = []
    page = fetch_page(INDEX, "pkg", options=QUICK, emit=events.append)
    assert page.manifest is None
    assert any("refused" in w for w in _warnings(events))


def test_an_https_manifest_of_an_http_index_is_read(server: FakeServer) -> None:
    elsewhere = "https://mirror.test/pkg/cuship.json"
    server.json(PAGE, _page(elsewhere))
    server.manifest(elsewhere, _project())
    page = fetch_page(INDEX, "pkg", options=QUICK)
    assert page.manifest == elsewhere and _has_facts(page)


@pytest.mark.parametrize("entry", [7, "cuship.json", {"manifest": 5}, {"manifest": ""}, {}])
def test_a_malformed_cuship_entry_is_ignored_and_the_site_manifest_used(
    server: FakeServer, entry: object
) -> None:
    server.json(PAGE, {**_page(), "_cuship": entry})
    server.manifest(SITE_MANIFEST, _site_v2("pkg"))
    server.manifest(PROJECT_MANIFEST, _project())
    events: list[Event] = []
    page = fetch_page(INDEX, "pkg", options=QUICK, emit=events.append)
    assert page.manifest == PROJECT_MANIFEST and _has_facts(page)
    (warning,) = _warnings(events)
    assert "'_cuship' entry" in warning and PAGE in warning


def test_a_100000_character_manifest_url_is_refused_unread_and_shown_short(
    server: FakeServer,
) -> None:
    server.json(PAGE, _page("x" * 100_000))
    events: list[Event] = []
    fetch_page(INDEX, "pkg", options=QUICK, emit=events.append)
    (warning,) = _warnings(events)
    assert f"{len(PAGE) + 100_000} characters" in warning and len(warning) < 500
    assert server.requests == [PAGE]


def test_no_manifest_is_read_when_asked_not_to(v2: FakeServer) -> None:
    page = fetch_page(INDEX, "pkg", options=QUICK, manifest=False)
    assert page.manifest is None and v2.requests == [PAGE]
