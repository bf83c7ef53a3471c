"""The index tree as data: hrefs, escaping, '+' encoding, PEP 691 shape, sub-indexes."""

from __future__ import annotations

import hashlib
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from cuship.errors import UsageError
from cuship.index import IndexedWheel, render, scan
from tests.wheel_factory import make_wheel


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.anchors: list[dict[str, str | None]] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "a":
            self.anchors.append(dict(attrs))


def _anchors(page: bytes) -> _Anchors:
    parser = _Anchors()
    parser.feed(page.decode())
    return parser


@pytest.fixture
def wheels(tmp_path: Path) -> tuple[IndexedWheel, ...]:
    make_wheel(tmp_path, "Demo.Pkg", "1.0", requires_python=">=3.8")
    make_wheel(tmp_path, "demo_pkg", "1.1+cu128torch2.8", requires_python=">=3.9,<4")
    make_wheel(tmp_path, "demo-pkg", "1.1+cu130torch2.9")
    make_wheel(
        tmp_path, "other", "2.0+CU128Torch2.8", filename="other-2.0+CU128Torch2.8-py3-none-any.whl"
    )
    return scan([tmp_path])


def test_layout_has_combined_and_variant_indexes(wheels: tuple[IndexedWheel, ...]) -> None:
    tree = render(wheels)
    assert "simple/index.html" in tree and "simple/index.json" in tree
    assert "simple/demo-pkg/index.html" in tree  # PEP 503 normalised directory
    assert "cu128torch2.8/simple/demo-pkg/index.json" in tree
    assert "cu128torch2.8/simple/other/index.json" in tree  # label lowercased
    assert "cu130torch2.9/simple/demo-pkg/index.html" in tree
    assert not any(p.startswith("cu130torch2.9/simple/other/") for p in tree)
    variant = json.loads(tree["cu128torch2.8/simple/demo-pkg/index.json"])
    assert [f["filename"] for f in variant["files"]] == [
        "demo_pkg-1.1+cu128torch2.8-py3-none-any.whl"
    ]


def test_relative_hrefs_encode_plus_and_carry_hashes(wheels: tuple[IndexedWheel, ...]) -> None:
    tree = render(wheels)
    by_name = {w.filename: w for w in wheels}
    combined = _anchors(tree["simple/demo-pkg/index.html"]).anchors
    variant = _anchors(tree["cu128torch2.8/simple/demo-pkg/index.html"]).anchors
    labelled = "demo_pkg-1.1+cu128torch2.8-py3-none-any.whl"
    href = next(a["href"] for a in combined if a["href"] and "cu128" in a["href"])
    assert href == (
        f"../../files/demo_pkg-1.1%2Bcu128torch2.8-py3-none-any.whl#sha256={by_name[labelled].sha256}"
    )
    assert variant[0]["href"] == "../" + href
    for anchor in combined:
        assert anchor["data-core-metadata"] == anchor["data-dist-info-metadata"]
        assert str(anchor["data-core-metadata"]).startswith("sha256=")


def test_metadata_file_matches_its_hash(wheels: tuple[IndexedWheel, ...]) -> None:
    tree = render(wheels)
    for wheel in wheels:
        body = tree[f"files/{wheel.filename}.metadata"]
        assert b"Name:" in body
        assert hashlib.sha256(body).hexdigest() == wheel.metadata_sha256


def test_base_url_links_are_absolute_without_double_slash(
    wheels: tuple[IndexedWheel, ...],
) -> None:
    tree = render(wheels, base_url="https://example.org/releases/download/v1//")
    page = json.loads(tree["simple/demo-pkg/index.json"])
    urls = [f["url"] for f in page["files"]]
    assert (
        "https://example.org/releases/download/v1/demo_pkg-1.1%2Bcu130torch2.9-py3-none-any.whl"
        in urls
    )
    assert all("//" not in u.removeprefix("https://") for u in urls)


def test_bad_base_url_is_a_usage_error(wheels: tuple[IndexedWheel, ...]) -> None:
    with pytest.raises(UsageError, match="ftp://x"):
        render(wheels, base_url="ftp://x")


def test_json_pages_follow_pep_691_and_700(wheels: tuple[IndexedWheel, ...]) -> None:
    tree = render(wheels, yanked={"demo-pkg==1.0": "broken build"})
    root = json.loads(tree["simple/index.json"])
    assert root == {
        "meta": {"api-version": "1.1"},
        "projects": [{"name": "demo-pkg"}, {"name": "other"}],
    }
    page = json.loads(tree["simple/demo-pkg/index.json"])
    assert set(page) == {"meta", "name", "files", "versions", "_cuship"}
    assert page["versions"] == ["1.0", "1.1+cu128torch2.8", "1.1+cu130torch2.9"]
    first = page["files"][0]
    assert first["yanked"] == "broken build"
    assert first["requires-python"] == ">=3.8"
    assert set(first["hashes"]) == {"sha256"}
    assert isinstance(first["size"], int) and first["size"] > 0
    assert page["files"][1]["yanked"] is False
    assert page["files"][2]["requires-python"] is None


def test_yanked_without_reason(wheels: tuple[IndexedWheel, ...]) -> None:
    name = "other-2.0+CU128Torch2.8-py3-none-any.whl"
    tree = render(wheels, yanked={name: ""})
    anchors = _anchors(tree["simple/other/index.html"]).anchors
    assert anchors[0]["data-yanked"] == ""
    assert json.loads(tree["simple/other/index.json"])["files"][0]["yanked"] is True


def test_markup_in_metadata_comes_out_inert(tmp_path: Path) -> None:
    make_wheel(tmp_path, "evil", "0.1", requires_python='"><script>alert(1)</script>')
    tree = render(scan([tmp_path]), yanked={"evil==0.1": "<img src=x onerror=alert(1)>"})
    page = _anchors(tree["simple/evil/index.html"])
    assert "script" not in page.tags and "img" not in page.tags
    assert page.anchors[-1]["data-requires-python"] == '"><script>alert(1)</script>'
    assert page.anchors[-1]["data-yanked"] == "<img src=x onerror=alert(1)>"
    assert b"<script>" not in tree["simple/evil/index.html"]


def test_manifests_index_and_project(wheels: tuple[IndexedWheel, ...]) -> None:
    descriptions = {w.filename: {"sass": ["sm_90"]} for w in wheels}
    tree = render(wheels, descriptions=descriptions)
    manifest = json.loads(tree["cuship-index.json"])
    assert manifest["schema"] == "cuship-index/2"
    assert set(manifest["indexes"]) == {"", "cu128torch2.8", "cu130torch2.9"}
    assert "wheels" not in manifest, "the index's manifest is thin: no wheel records"
    entry = manifest["projects"]["demo-pkg"]
    assert entry["manifest"] == "simple/demo-pkg/cuship.json"
    assert entry["labels"] == ["cu128torch2.8", "cu130torch2.9"]
    project = json.loads(tree[entry["manifest"]])
    assert project["schema"] == "cuship-project/1" and project["project"] == "demo-pkg"
    assert len(project["wheels"]) == entry["wheels"]
    page = json.loads(tree["simple/demo-pkg/index.json"])
    assert page["_cuship"] == {"manifest": "cuship.json"}, "PEP 700 keeps '_' keys for us"
    variant = json.loads(tree["cu128torch2.8/simple/demo-pkg/index.json"])
    assert variant["_cuship"] == {"manifest": "../../../simple/demo-pkg/cuship.json"}
    record = next(r for r in project["wheels"] if r["local"] == "cu128torch2.8")
    assert record["url"] == "../../files/demo_pkg-1.1%2Bcu128torch2.8-py3-none-any.whl"
    assert record["project"] == "demo-pkg"
    assert record["version"] == "1.1+cu128torch2.8"
    assert record["tags"] == ["py3-none-any"]
    assert record["requires_python"] == ">=3.9,<4"
    assert record["describe"] == {"sass": ["sm_90"]}
    assert len(record["sha256"]) == 64


def test_render_is_deterministic(wheels: tuple[IndexedWheel, ...]) -> None:
    assert render(wheels) == render(tuple(reversed(wheels)))


@pytest.mark.parametrize(
    ("python", "metadata", "yanked", "href"),
    [
        (">=3.8", "ab" * 32, None, "../../files/demo-1.0-py3-none-any.whl"),
        (None, None, "", "https://example.org/a&b/demo-1.0%2Bcu130-py3-none-any.whl"),
        ('<4,"quoted"\\ \u00e9\u2603', "cd" * 32, 'bad "build"\n\u2603', "x"),
        ("", "", "r", ""),
    ],
)
def test_project_json_is_the_text_json_writes(
    python: str | None, metadata: str | None, yanked: str | None, href: str
) -> None:
    # The page is written without json's encoder: it must be json.dumps's text, byte for byte.
    from cuship.index._pages import FileLink, project_json

    links = [
        FileLink(
            filename=f"d\u00e9mo-{i}.0-py3-none-any.whl",
            href=href,
            sha256="ef" * 32,
            size=1234 * i,
            requires_python=python,
            metadata_sha256=metadata,
            yanked=yanked,
        )
        for i in range(3)
    ]
    expected = {
        "meta": {"api-version": "1.1"},
        "name": "d\u00e9mo",
        "versions": ["0.0", "1.0\u2603"],
        "files": [
            {
                "filename": link.filename,
                "url": link.href,
                "hashes": {"sha256": link.sha256},
                "requires-python": link.requires_python,
                "size": link.size,
                **(
                    {
                        "core-metadata": {"sha256": link.metadata_sha256},
                        "dist-info-metadata": {"sha256": link.metadata_sha256},
                    }
                    if link.metadata_sha256 is not None
                    else {"core-metadata": False}
                ),
                "yanked": False if link.yanked is None else (link.yanked or True),
            }
            for link in links
        ],
        "_cuship": {"manifest": "../x/\u2603.json", "n": [1, None]},
    }
    page = project_json("d\u00e9mo", links, ["0.0", "1.0\u2603"], {"_cuship": expected["_cuship"]})
    assert page == (json.dumps(expected, separators=(",", ":")) + "\n").encode("ascii")
    assert (
        project_json("d", [], [])
        == b'{"meta":{"api-version":"1.1"},"name":"d","versions":[],"files":[]}\n'
    )


@pytest.mark.parametrize(
    "text",
    ["", "plain-1.0+cu130.whl", ">=3.9", "<b>&amp;</b>", 'it\'s "quoted"', "\u2603&", "&" * 3],
)
def test_page_escape_is_html_escape(text: str) -> None:
    # Pages escape through a shortcut for text without markup; it must say what html.escape says.
    import html

    from cuship.index._pages import escape

    assert escape(text) == html.escape(text)
    assert escape(text) == html.escape(text)  # again, from the memo


_PROJECT_LISTS = [
    [],
    ["a"],
    ["alpha", "beta-2", "g.h_i"],
    ["d\u00e9mo", "plain", "<b>&amp;", 'it\'s "quoted"', "\u2603"],
]


@pytest.mark.parametrize("projects", _PROJECT_LISTS)
def test_root_pages_are_the_text_of_each_name_escaped(projects: list[str]) -> None:
    # The roots are written without a dict or an escape call per project; they must be what
    # json.dumps and html.escape of each name give.
    import html

    from cuship.index._pages import root_html, root_json

    document = {"meta": {"api-version": "1.1"}, "projects": [{"name": p} for p in projects]}
    assert root_json(projects) == (json.dumps(document, separators=(",", ":")) + "\n").encode()
    page = root_html(projects).decode("utf-8")
    links = "".join(f'    <a href="{html.escape(p)}/">{html.escape(p)}</a><br>\n' for p in projects)
    assert page.endswith(links + "  </body>\n</html>\n")
    assert page.count("<a ") == len(projects) and "<b>&amp;</a>" not in page


@pytest.mark.parametrize("base_url", [None, "https://example.org/r\u00e9leases"])
@pytest.mark.parametrize("projects", _PROJECT_LISTS)
def test_the_index_manifest_is_the_text_json_writes(
    projects: list[str], base_url: str | None
) -> None:
    # cuship-index.json is written as text; it must be json.dumps's, byte for byte.
    from cuship import __version__
    from cuship.index.render import ProjectEntry, index_manifest

    shapes = [(), ("cu128",), ("cu128", "cu130torch2.9"), ('\u2603"<',)]
    entries = {p: ProjectEntry(shapes[i % len(shapes)], i + 1) for i, p in enumerate(projects)}
    labels = sorted({label for entry in entries.values() for label in entry.labels})
    document = {
        "schema": "cuship-index/2",
        "generator": f"cuship {__version__}",
        "base_url": base_url,
        "indexes": {"": "simple/", **{label: f"{label}/simple/" for label in labels}},
        "projects": {
            p: {
                "manifest": f"simple/{p}/cuship.json",
                "labels": list(entries[p].labels),
                "wheels": entries[p].wheels,
            }
            for p in sorted(entries)
        },
    }
    expected = json.dumps(document, separators=(",", ":"), sort_keys=True) + "\n"
    assert index_manifest(entries, base_url) == expected.encode("utf-8")
    assert json.loads(index_manifest(entries, base_url)) == document


@pytest.mark.parametrize("base_url", [None, "https://example.org/r\u00e9leases"])
@pytest.mark.parametrize("projects", _PROJECT_LISTS)
def test_an_update_patches_the_manifest_to_the_bytes_a_full_render_gives(
    projects: list[str], base_url: str | None
) -> None:
    # An update encodes the manifest it read with its changed projects put in (one changed,
    # one new, one gone): the bytes must be those of rendering every project's entry.
    from cuship.index._shared import Listed
    from cuship.index.render import ProjectEntry, index_manifest, patched_manifest

    shapes = [(), ("cu128",), ("cu128", "cu130torch2.9"), ('\u2603"<',)]
    before = {p: ProjectEntry(shapes[i % len(shapes)], i + 1) for i, p in enumerate(projects)}
    listed = Listed(json.loads(index_manifest(before, base_url))["projects"])
    changed: dict[str, ProjectEntry | None] = {"zz-new": ProjectEntry((), 1)}
    if projects:
        changed[projects[0]] = ProjectEntry(("cu126",), 7)
    if len(projects) > 1:
        changed[projects[-1]] = None
    after = {p: e for p, e in {**before, **changed}.items() if e is not None}
    labels = {label for entry in after.values() for label in entry.labels}
    expected = index_manifest(after, base_url)
    assert patched_manifest(listed.raw, changed, labels, base_url) == expected
    assert {p: listed[p] for p in listed} == before  # the entries read back, made on demand


def test_a_project_manifest_is_the_text_json_writes_of_its_records() -> None:
    # cuship.json is written as text, each describe record once; it must be json.dumps's
    # text of the records (keys sorted), byte for byte, whatever the rows hold.
    from cuship import __version__
    from cuship.index.render import DescribeTexts, Row, project_tree

    shared: dict[str, object] = {
        "label": None,
        "sass": [],
        "ptx": [],
        "torch_abi": "none",
        "z": [1, None, True],
    }
    odd: dict[str, object] = {
        "label": "cu130",
        "cuda": "13.0",
        "note": 'd\u00e9j\u00e0 "vu" <\u2603>',
        "n": 1.5,
    }
    rows = [
        Row(filename=f"p-{i}.0{local}-py3-none-any.whl", project="p", version=f"{i}.0{local}",
            local=local.lstrip("+") or None, tags=("py3-none-any",) if i % 2 else ("a", "b"),
            sha256=f"{i:02d}" * 32, size=1000 + i, requires_python=python,
            metadata_sha256="ab" * 32, base=base, yanked=yanked, describe=describe,
            attestation_sha256=attested)
        for i, (local, python, base, yanked, describe, attested) in enumerate([
            ("", None, None, None, shared, None),
            ("", ">=3.9", None, "", shared, "cd" * 32),
            ("+cu130", "<4,!=3.0.*", "https://h.example/r\u00e9l", "bad \"build\"", odd, None),
            ("+cu130", None, None, "\u2603", {}, "ef" * 32),
            ("", None, "https://h.example/x", None, dict(shared), None),
        ])
    ]  # fmt: skip
    expected = {
        "schema": "cuship-project/1",
        "generator": f"cuship {__version__}",
        "project": "p",
        "wheels": [row.record() for row in rows],
    }
    text = json.dumps(expected, separators=(",", ":"), default=str, sort_keys=True) + "\n"
    texts: DescribeTexts = {}
    for memo in (None, texts, texts):  # alone, then twice through one memo
        tree = project_tree("p", list(reversed(rows)), describe_texts=memo)
        assert tree["simple/p/cuship.json"] == text.encode()
    assert len(texts) == 4  # shared, odd, {} and the copy of shared: one text each
