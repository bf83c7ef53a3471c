from __future__ import annotations

import pytest

from cuship.arch import parse_arch_list, sm_of_cc
from cuship.errors import UsageError


def test_torch_spelling_round_trips_to_cmake_and_gencode() -> None:
    spec = parse_arch_list("8.0;9.0;10.0;12.0+PTX")
    assert spec.sass == ("80", "90", "100", "120")
    assert spec.ptx == ("120",)
    assert spec.cmake == "80-real;90-real;100-real;120"
    assert spec.torch == "8.0;9.0;10.0;12.0+PTX"
    assert spec.gencode[-1] == "-gencode=arch=compute_120,code=compute_120"
    assert len(spec.gencode) == 5


def test_sm_and_compute_spellings_with_suffixes() -> None:
    spec = parse_arch_list("sm_90a, compute_90 10.0f")
    assert [(t.sm, t.sass, t.ptx) for t in spec.targets] == [
        ("90a", True, False),
        ("90", False, True),
        ("100f", True, False),
    ]
    assert spec.cmake == "90a-real;90-virtual;100f-real"
    assert spec.slug == "sm90a_c90_100f"


def test_duplicates_merge() -> None:
    spec = parse_arch_list("9.0 9.0+PTX")
    assert len(spec.targets) == 1
    assert spec.targets[0].ptx and spec.targets[0].sass


@pytest.mark.parametrize("bad", ["", "nine", "9", "sm_9", "9.0x"])
def test_bad_arch_names_the_input(bad: str) -> None:
    with pytest.raises(UsageError) as err:
        parse_arch_list(bad)
    assert repr(bad) in str(err.value) or (bad == "9" and "'9'" in str(err.value))


def test_sm_of_cc() -> None:
    assert sm_of_cc("12.0") == "120"
    assert sm_of_cc("9.0a") == "90a"
    with pytest.raises(UsageError):
        sm_of_cc("nine")
