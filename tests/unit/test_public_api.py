"""``cuship``'s declared public API: every name resolves, lazily, to the object its module defines."""

from __future__ import annotations

import importlib

import pytest

import cuship


def test_every_public_name_resolves_to_its_definition() -> None:
    assert set(cuship.__all__) == {"__version__", *cuship._PUBLIC}
    for name, module in cuship._PUBLIC.items():
        assert getattr(cuship, name) is getattr(importlib.import_module(module), name)
    assert set(cuship.__all__) <= set(dir(cuship))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Store'"):
        cuship.Store  # noqa: B018 - the access is the test
