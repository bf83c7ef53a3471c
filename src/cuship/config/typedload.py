"""The strict loader config is read with; it lives in :mod:`cuship.schema`, shared with the data
files, so that loading them does not import the whole configuration package."""

from __future__ import annotations

from cuship.schema import Validator, field_doc, load, schema

__all__ = ["Validator", "field_doc", "load", "schema"]
