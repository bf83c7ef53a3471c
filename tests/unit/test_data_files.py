"""The shipped data files have published JSON Schemas: current, and telling the truth about what
cuship accepts, so an editor flags a broken row the way ``cuship`` would."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs in [dev]
import pytest

from cuship.compat import DATA_DIR, load
from cuship.docs.dataschemas import FILES, data_schemas
from cuship.errors import ConfigError
from cuship.schema import read_toml

REGENERATE = "run: python -c 'import cuship.docs.dataschemas as d; d.write_schemas()'"


def _published(repo_root: Path) -> dict[str, Any]:
    directory = repo_root / "src/cuship/schema"
    return {
        path.name: json.loads(path.read_text())
        for path in sorted(directory.glob("*.schema.json"))
        if path.name.removesuffix(".schema.json") in FILES
    }


def test_published_data_schemas_are_current(repo_root: Path) -> None:
    assert _published(repo_root) == data_schemas(), REGENERATE


@pytest.mark.parametrize("name", list(FILES))
def test_shipped_data_files_follow_their_schema(name: str) -> None:
    doc = data_schemas()[f"{name}.schema.json"]
    jsonschema.Draft202012Validator.check_schema(doc)
    errors = list(
        jsonschema.Draft202012Validator(doc).iter_errors(read_toml(DATA_DIR / f"{name}.toml"))
    )
    assert errors == []


@pytest.mark.parametrize(
    ("file", "old", "new", "where"),
    [
        ("cuda.toml", 'sms = ["35"', 'sms = "35"\nx = ["35"', "toolkit[0]"),
        ("cuda.toml", 'version = "11.8.0"', "version = 11.8", "toolkit[0].version"),
        ("torch.toml", "cxx11_abi = [false]", "cxx11_abi = []", "release[0].cxx11_abi"),
        ("gpus.toml", "memory_gib = [11]", 'memory_gib = ["11"]', "gpu[0].memory_gib"),
        ("gpus.toml", 'name = "GTX 1080 Ti"', "name = 1080", "gpu[0].name"),
        ("gpus.toml", "memory_gbps = 3350.0", "memory_gbps = 0", "peak[0].memory_gbps"),
        ("gpus.toml", "fp8 = 1979.0", "fp4 = 3958.0", "peak[0].tflops"),
        ("gpus.toml", 'arch_family = "Pascal"', 'arch_familly = "Pascal"', "gpu[0].arch_familly"),
    ],
)
def test_the_schema_rejects_what_the_loader_rejects(
    tmp_path: Path, file: str, old: str, new: str, where: str
) -> None:
    directory = tmp_path / "data"
    shutil.copytree(DATA_DIR, directory)
    path = directory / file
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(ConfigError) as caught:
        load(directory)
    assert file in str(caught.value) and where in str(caught.value)
    doc = data_schemas()[file.replace(".toml", ".schema.json")]
    assert not jsonschema.Draft202012Validator(doc).is_valid(read_toml(path))
