"""cuship's own reading of project names and wheel filename parts against packaging's.

The index reads filenames without importing packaging.utils (see cuship.wheel.read.filename); where
it gives an answer, the answer must be packaging's, and where it cannot, the scan must still
end with packaging's verdict.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from cuship.index.scan import _parse_filename, _Skip
from cuship.wheel.read.filename import canonical_name, plain_project, tag_set

NAMES = [
    "Django",
    "oslo.concurrency",
    "zope_interface",
    "A.B_C-d",
    "a..b__c--d",
    "flash_attn",
    "X",
    "pkg00001",
    "Ünïcode_Name",
    "_leading",
    "trailing.",
    "",
]

TAG_PARTS = [
    "py3-none-any",
    "py2.py3-none-any",
    "cp312-cp312-manylinux_2_28_x86_64",
    "cp311-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64",
    "PY3-NONE-WIN_AMD64",
    "cp39.cp310-cp39.cp310-macosx_11_0_arm64.macosx_10_9_x86_64",
]


@pytest.mark.parametrize("name", NAMES)
def test_canonical_name_is_packagings(name: str) -> None:
    assert canonical_name(name) == canonicalize_name(name)


@pytest.mark.parametrize(
    "name_part",
    ["Django", "oslo.concurrency", "zope_interface", "flash_attn", "X", "a.b_c", "pkg9"],
)
def test_plain_name_parts_get_packagings_project(name_part: str) -> None:
    expected = parse_wheel_filename(f"{name_part}-1.0-py3-none-any.whl")[0]
    assert plain_project(name_part) == expected


@pytest.mark.parametrize("name_part", ["a__b", "_lead", "trail.", "Ünï", "a b", "a+b", ""])
def test_other_name_parts_are_left_to_packaging(name_part: str) -> None:
    assert plain_project(name_part) is None


@pytest.mark.parametrize("tag_part", TAG_PARTS)
def test_tag_sets_are_packagings(tag_part: str) -> None:
    tags = parse_wheel_filename(f"x-1.0-{tag_part}.whl")[3]
    assert tag_set(tag_part) == tuple(sorted(str(tag) for tag in tags))


@pytest.mark.parametrize(
    "tag_part",
    # not three fields; an empty component; a Python tag that is not an identifier (packaging
    # 26.3 refuses those two, earlier releases made tags of them); not ASCII
    ["py3-none", "py3-none-any-extra", "py3..x-none-any", "py3-none-", "3py-none-any",
     "py3-none-ány"],
)  # fmt: skip
def test_a_tag_part_that_is_not_plain_is_left_to_packaging(tag_part: str) -> None:
    assert tag_set(tag_part) is None


@pytest.mark.parametrize(
    "filename",
    [
        "Flash_Attn-2.8.3+cu130torch2.9-cp312-cp312-linux_x86_64.whl",
        "pkg-1.0-1build-py3-none-any.whl",  # a build tag: packaging parses it
        "_odd_-1.0-py3-none-any.whl",  # not plain: packaging accepts it
        "Ünïcode-1.0-py2.py3-none-any.whl",
        "pkg-1.0-3py-none-any.whl",  # packaging decides (26.3 refuses it)
    ],
)
def test_scan_reads_a_filename_as_packaging_does(filename: str) -> None:
    try:
        name, version, _build, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename as err:  # this release of packaging refuses it: so does the scan
        with pytest.raises(_Skip) as scan_says:
            _parse_filename(filename, filename)
        assert str(scan_says.value) == f"invalid wheel filename: {err}"
        return
    parsed = _parse_filename(filename, filename)
    assert (parsed.project, parsed.version, parsed.local) == (name, version, version.local)
    assert parsed.tags == tuple(sorted(str(tag) for tag in tags))


@pytest.mark.parametrize(
    "filename",
    ["a__b-1.0-py3-none-any.whl", "pkg-not.a.version-py3-none-any.whl", "pkg-1.0-py3.whl"],
)
def test_scan_words_a_bad_filename_as_packaging_does(filename: str) -> None:
    with pytest.raises(InvalidWheelFilename) as packaging_says:
        parse_wheel_filename(filename)
    with pytest.raises(_Skip) as scan_says:
        _parse_filename(filename, f"/wheels/{filename}")
    assert str(scan_says.value) == f"invalid wheel filename: {packaging_says.value}"
    assert scan_says.value.path == Path(f"/wheels/{filename}")
