"""The torch ABI record (``.cuship/torch-abi.json``): what the first build of a torch matrix found,
so that later plans collapse the torch axis without building. Light to import: ``cuship matrix``
reads it."""

from __future__ import annotations

from pathlib import Path

from cuship import _read
from cuship._fs import write_json
from cuship.config import Config
from cuship.errors import InputError
from cuship.matrix import AbiRecord
from cuship.wheel.torchabi import TORCH_ABIS

__all__ = ["RECORD", "load_record", "read_record", "write_record"]


RECORD = Path(".cuship") / "torch-abi.json"


def read_record(root: Path) -> AbiRecord | None:
    """The record under ``root``, if there is one."""
    path = root / RECORD
    try:
        doc = _read.read_json(path, _read.CACHE)
    except FileNotFoundError:
        return None
    except (OSError, _read.Refused) as err:
        raise InputError(
            f"cannot read the torch ABI record {str(path)!r}: {err}",
            hint="delete it; the next build writes it again",
        ) from err
    fields = ("project", "version", "torch_abi", "wheel", "job")
    if not isinstance(doc, dict) or any(not isinstance(doc.get(f), str) for f in fields):
        raise InputError(
            f"{str(path)!r} is not a torch ABI record: it needs string fields {', '.join(fields)}",
            hint="delete it; the next build writes it again",
        )
    if doc["torch_abi"] not in TORCH_ABIS:
        raise InputError(
            f"{str(path)!r}: torch_abi {doc['torch_abi']!r} is none of {', '.join(TORCH_ABIS)}",
            hint="delete it; the next build writes it again",
        )
    return AbiRecord(**{f: doc[f] for f in fields})


def load_record(config: Config) -> AbiRecord | None:
    """The record under the config's root when it speaks for this project and version."""
    record = read_record(config.root)
    if record is None or not record.matches(config.project.name, config.project.version):
        return None
    return record


def write_record(root: Path, record: AbiRecord) -> Path:
    """Write ``record`` under ``root`` atomically; the path written."""
    path = root / RECORD
    doc = {f: getattr(record, f) for f in ("project", "version", "torch_abi", "wheel", "job")}
    write_json(path, doc)
    return path
