from __future__ import annotations

import pytest
from packaging.version import Version

from cuship.errors import UsageError
from cuship.wheel.names import (
    Variant,
    default_template,
    format_label,
    label_of,
    parse_label,
    with_label,
)


def test_default_label_round_trip() -> None:
    variant = Variant(cuda=Version("12.8.1"), torch=Version("2.8"), cxx11abi=True)
    label = format_label(variant, default_template(torch=True, abi=True))
    assert label == "cu128torch2.8cxx11abiTRUE"
    back = parse_label(label)
    assert back == Variant(cuda=Version("12.8"), torch=Version("2.8"), cxx11abi=True)


@pytest.mark.parametrize(
    ("label", "cuda", "torch"),
    [
        ("cu130", "13.0", None),
        ("cu118torch2.4", "11.8", "2.4"),
        ("+cu129torch2.10", "12.9", "2.10"),
    ],
)
def test_parse_shorter_default_labels(label: str, cuda: str, torch: str | None) -> None:
    variant = parse_label(label)
    assert variant.cuda == Version(cuda)
    assert variant.torch == (None if torch is None else Version(torch))


def test_custom_template_flash_attn_style() -> None:
    template = "cu{cuda_major}torch{torch}cxx11abi{abi}"
    variant = Variant(cuda=Version("12.9.1"), torch=Version("2.8"), cxx11abi=False)
    label = format_label(variant, template)
    assert label == "cu12torch2.8cxx11abiFALSE"
    assert parse_label(label, template).cxx11abi is False


def test_packaging_normalises_label_in_versions() -> None:
    version = with_label("0.1.0", "cu128torch2.8cxx11abiTRUE")
    assert str(version) == "0.1.0+cu128torch2.8cxx11abitrue"
    assert label_of(version) == "cu128torch2.8cxx11abitrue"
    assert label_of("0.1.0") is None
    assert with_label("0.1.0+cpu", "cu128") == Version("0.1.0+cu128")


def test_template_errors_name_the_field() -> None:
    with pytest.raises(UsageError, match=r"unknown placeholder \{gpu\}"):
        format_label(Variant(cuda=Version("12.8")), "cu{cuda_short}{gpu}")
    with pytest.raises(UsageError, match=r"needs \{torch\}"):
        format_label(Variant(cuda=Version("12.8")), "cu{cuda_short}torch{torch}")
    with pytest.raises(UsageError, match="not a valid local version label"):
        format_label(Variant(cuda=Version("12.8")), "cu {cuda_short}!")
    with pytest.raises(UsageError, match="does not match"):
        parse_label("rocm6.2")
