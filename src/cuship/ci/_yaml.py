"""YAML for people: keys in the order they were written, ``|`` blocks for multi-line strings.

PyYAML resolves a bare ``on`` as the boolean true (YAML 1.1); a string ``"on"`` key is therefore
written quoted, which every YAML 1.1 and 1.2 reader (GitHub's included) reads back as "on".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

__all__ = ["dump"]


class _Dumper(yaml.SafeDumper):
    """SafeDumper that keeps mapping order and indents block sequences under their key."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)

    def ignore_aliases(self, data: object) -> bool:
        return True  # a shared step dict is written out again, never as &anchor/*alias


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        text = value if value.endswith("\n") else value + "\n"
        return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|")
    return dumper.represent_str(value)


def _mapping(dumper: yaml.SafeDumper, value: Mapping[Any, Any]) -> yaml.MappingNode:
    return dumper.represent_mapping("tag:yaml.org,2002:map", value.items(), flow_style=False)


_Dumper.add_representer(str, _str)
_Dumper.add_representer(dict, _mapping)


def dump(document: Mapping[str, Any], *, header: str = "") -> str:
    """``document`` as block YAML, after ``header`` (comment lines, each starting with ``#``)."""
    body = yaml.dump(dict(document), Dumper=_Dumper, sort_keys=False, width=100, allow_unicode=True)
    return header + body
