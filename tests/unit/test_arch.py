from __future__ import annotations

import re

import pytest

from cuship import arch
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


def test_one_sm_in_each_spelling_the_callers_accept() -> None:
    assert arch.sm_parts(" SM_90a ") == (9, 0, "a")
    assert arch.sm_parts("compute_120") == (12, 0, "")
    assert arch.sm_parts("9.0") is None
    assert arch.is_sm_number("100f") and not arch.is_sm_number("sm_90")
    assert arch.is_sm_name("SM_120") and arch.is_sm_name("90a") and not arch.is_sm_name(" 90")
    assert arch.is_relocatable("lto_90a") and not arch.is_relocatable("90")
    assert arch.bare_sm("sm_90a") == "90a" and arch.bare_sm(" Compute_90 ") == "90"
    assert arch.bare_sm("9.0") == "90" and arch.bare_sm("sm90") == "90"
    # the tables' spelling is strict: ASCII digits, no leading zero
    assert arch.is_table_sm("90a") and not arch.is_table_sm("090")
    assert arch.is_table_cc("12.0") and not arch.is_table_cc("09.0")


def test_sm_key_orders_numbers_then_suffixes_and_nonsense_last() -> None:
    assert sorted(["120", "x", "90a", "100f", "90"], key=arch.sm_key) == [
        "90",
        "90a",
        "100f",
        "120",
        "x",
    ]


def test_compute_capabilities() -> None:
    assert arch.is_cc("9.0") and arch.is_cc("12.0")
    assert not arch.is_cc("12.10") and not arch.is_cc("9") and not arch.is_cc("9.0a")
    assert arch.cc_tuple("10.0") == (10, 0) > arch.cc_tuple("9.0")
    assert arch.cc_tuple("9.0a") == (9, 0) and arch.cc_tuple("9") == (9, 0)


def test_variant_sm_and_its_schema_agree() -> None:
    assert arch.variant_sm("90_real") == (9, 0, "real")
    assert arch.variant_sm("120_virtual") == (12, 0, "virtual")
    assert arch.variant_sm("sm_90") is None
    for value in ("90_real", "1001_virtual", "9_real", "90_other"):
        in_schema = re.search(arch.VARIANT_SM_SCHEMA, value) is not None
        assert in_schema == (arch.variant_sm(value) is not None), value


def test_arch_flags_in_a_build_script() -> None:
    assert arch.names_arch_flag("    '-gencode', 'arch=compute_90,code=sm_90',")
    assert arch.names_arch_flag('nvcc_flags = ["-arch=sm_80"]')
    assert arch.names_arch_flag("set(CMAKE_CUDA_ARCHITECTURES 80 90)")
    assert not arch.names_arch_flag("# build for the GPU architecture of the machine")
