"""ed25519 key pairs for attestations: make them, load them, name them by key id.

The private key is an unencrypted PKCS#8 PEM file readable by its owner only (mode 0600); the
public key sits beside it as ``<path>.pub`` (SubjectPublicKeyInfo PEM). A key id is the sha256
of the 32 raw public-key bytes, in hex: the same key gives the same id wherever it is stored.
``cryptography`` is imported on first use, so the rest of cuship works without the extra.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from cuship import _read
from cuship.errors import InputError, ToolMissing, UsageError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

__all__ = [
    "KeyPair",
    "SigningKey",
    "VerifyKey",
    "key_id",
    "keygen",
    "load_signing_key",
    "load_verify_key",
    "public_path",
]

_INSTALL_HINT = "pip install 'cuship[attest]'"


@dataclass(frozen=True, slots=True, kw_only=True)
class KeyPair:
    """Where :func:`keygen` wrote the two halves, and the key id."""

    private: Path
    public: Path
    keyid: str

    def to_json(self) -> dict[str, object]:
        """``cuship keygen --json``."""
        return {"private": str(self.private), "public": str(self.public), "keyid": self.keyid}


@dataclass(frozen=True, slots=True, kw_only=True)
class SigningKey:
    keyid: str
    key: Ed25519PrivateKey


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifyKey:
    keyid: str
    key: Ed25519PublicKey


def _ed25519() -> ModuleType:
    try:
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError as err:
        raise ToolMissing(
            "attestations need the 'cryptography' package, which is not installed",
            hint=_INSTALL_HINT,
        ) from err
    return ed25519


def _serialization() -> ModuleType:
    _ed25519()
    from cryptography.hazmat.primitives import serialization

    return serialization


def public_path(private: Path) -> Path:
    """Where the public half of ``private`` lives: ``<private>.pub``."""
    return private.with_name(private.name + ".pub")


def key_id(public: Ed25519PublicKey) -> str:
    """sha256 of the raw 32-byte public key, hex."""
    ser = _serialization()
    raw = public.public_bytes(ser.Encoding.Raw, ser.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def _write_new(path: Path, data: bytes, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.fchmod(fd, mode)  # the umask may have taken bits away; never added any
        os.write(fd, data)
    finally:
        os.close(fd)


def keygen(path: Path) -> KeyPair:
    """Write a new ed25519 private key at ``path`` (mode 0600) and its public key beside it.

    Refuses to overwrite either file (:class:`UsageError`): a lost signing key cannot be
    recovered, and every attestation made with it would no longer verify against a new one.
    """
    ed25519 = _ed25519()
    ser = _serialization()
    pub = public_path(path)
    for target in (path, pub):
        if target.exists() or target.is_symlink():
            raise UsageError(
                f"refusing to overwrite {str(target)!r}: it exists",
                hint="choose another path, or move the old key away first",
            )
    private: Ed25519PrivateKey = ed25519.Ed25519PrivateKey.generate()
    pem = private.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.PKCS8, ser.NoEncryption())
    public_pem = private.public_key().public_bytes(
        ser.Encoding.PEM, ser.PublicFormat.SubjectPublicKeyInfo
    )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_new(path, pem, 0o600)
        _write_new(pub, public_pem, 0o644)
    except OSError as err:
        raise InputError(f"cannot write the key pair at {str(path)!r}: {err.strerror}") from err
    return KeyPair(private=path, public=pub, keyid=key_id(private.public_key()))


def _key_bytes(path: Path, what: str) -> bytes:
    """The key file's bytes (:mod:`cuship._read`: a regular file of at most 64 KiB; a FIFO or
    ``/dev/zero`` is refused unread)."""
    try:
        return _read.read_bytes(path, _read.KEY)
    except OSError as err:
        raise InputError(
            f"cannot read the {what} {str(path)!r}: {err.strerror or err}", hint=_read.KEY.hint
        ) from err
    except _read.Refused as err:
        raise InputError(f"the {what} {str(path)!r} {err.problem}", hint=_read.KEY.hint) from None


def load_signing_key(path: Path) -> SigningKey:
    """The ed25519 private key in PEM file ``path``; anything else is an :class:`InputError`."""
    ed25519 = _ed25519()
    ser = _serialization()
    data = _key_bytes(path, "private key")
    try:
        key = ser.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as err:
        raise InputError(
            f"{str(path)!r} is not an unencrypted PEM private key: {err}",
            hint="make one with `cuship keygen -o KEY`",
        ) from err
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise InputError(
            f"{str(path)!r} holds a {type(key).__name__}, not an ed25519 key",
            hint="make one with `cuship keygen -o KEY`",
        )
    return SigningKey(keyid=key_id(key.public_key()), key=key)


def load_verify_key(path: Path) -> VerifyKey:
    """The ed25519 public key in PEM file ``path`` (a private key file is accepted too)."""
    ed25519 = _ed25519()
    ser = _serialization()
    data = _key_bytes(path, "public key")
    try:
        if b"PRIVATE KEY" in data:
            key = ser.load_pem_private_key(data, password=None).public_key()
        else:
            key = ser.load_pem_public_key(data)
    except (ValueError, TypeError) as err:
        raise InputError(
            f"{str(path)!r} is not a PEM public key: {err}",
            hint="pass the KEY.pub file `cuship keygen` wrote",
        ) from err
    if not isinstance(key, ed25519.Ed25519PublicKey):
        raise InputError(
            f"{str(path)!r} holds a {type(key).__name__}, not an ed25519 key",
            hint="pass the KEY.pub file `cuship keygen` wrote",
        )
    return VerifyKey(keyid=key_id(key), key=key)
