"""Base58check address and key strings, RCD type 1 (docs/formats.md §3.1 and §3.2).

A string is ``Base58(prefix || payload32 || checksum4)`` with
``checksum = SHA256d(prefix || payload32)[:4]`` and the Bitcoin alphabet.

| kind  | prefix         | payload                | text          |
|-------|----------------|------------------------|---------------|
| FA    | 5f b1          | RCD hash (SHA256d RCD1) | 52 chars "FA" |
| Fs    | 64 78          | ed25519 seed           | 52 chars "Fs" |
| EC    | 59 2a          | ed25519 public key     | 52 chars "EC" |
| Es    | 5d b6          | ed25519 seed           | 52 chars "Es" |
| idpub | 03 45 ef 9d e0 | ed25519 public key     | 55 "idpub"    |
| idsec | 03 45 f3 d0 d6 | ed25519 seed           | 55 "idsec"    |

Decoders check the exact decoded length, the exact prefix and the checksum, and raise
``AddressError``; raw 32-byte inputs of the wrong length raise ``DecodeError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

from ledger.core.errors import AddressError, DecodeError
from ledger.core.hashing import sha256d
from ledger.core.keys import SigningKey

__all__ = [
    "AddressKind",
    "BASE58_ALPHABET",
    "PREFIXES",
    "RCD1_TYPE",
    "address_kind",
    "base58_decode",
    "base58_encode",
    "ec_public_address",
    "ec_secret_address",
    "fct_address_from_public_key",
    "fct_public_address",
    "fct_secret_address",
    "identity_public_key",
    "identity_secret_key",
    "public_address_for_secret",
    "public_key_from_ec_address",
    "public_key_from_identity",
    "rcd1",
    "rcd_hash",
    "rcd_hash_from_fct_address",
    "seed_from_ec_secret",
    "seed_from_fct_secret",
    "seed_from_identity_secret",
]

AddressKind = Literal["FA", "Fs", "EC", "Es", "idpub", "idsec"]

BASE58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_BASE58_INDEX: Mapping[str, int] = MappingProxyType(
    {char: i for i, char in enumerate(BASE58_ALPHABET)}
)

PREFIXES: Mapping[AddressKind, bytes] = MappingProxyType(
    {
        "FA": bytes.fromhex("5fb1"),
        "Fs": bytes.fromhex("6478"),
        "EC": bytes.fromhex("592a"),
        "Es": bytes.fromhex("5db6"),
        "idpub": bytes.fromhex("0345ef9de0"),
        "idsec": bytes.fromhex("0345f3d0d6"),
    }
)
RCD1_TYPE = 0x01
_PUBLIC_FOR_SECRET: Mapping[AddressKind, AddressKind] = MappingProxyType(
    {"Fs": "FA", "Es": "EC", "idsec": "idpub"}
)
_PAYLOAD_BYTES = 32
_CHECKSUM_BYTES = 4


def base58_encode(data: bytes) -> str:
    """Bitcoin-alphabet base58 of ``data``; each leading zero byte becomes ``'1'``."""
    number = int.from_bytes(data, "big")
    digits: list[str] = []
    while number:
        number, rem = divmod(number, 58)
        digits.append(BASE58_ALPHABET[rem])
    zeros = len(data) - len(data.lstrip(b"\0"))
    return "1" * zeros + "".join(reversed(digits))


def base58_decode(text: str) -> bytes:
    """Inverse of ``base58_encode``.

    Raises:
        DecodeError: ``text`` is not a string or holds a character outside the alphabet.
    """
    if not isinstance(text, str):
        raise DecodeError("base58 input must be a string")
    number = 0
    for char in text:
        value = _BASE58_INDEX.get(char)
        if value is None:
            raise DecodeError(f"invalid base58 character {char!r}")
        number = number * 58 + value
    zeros = len(text) - len(text.lstrip("1"))
    body = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return b"\0" * zeros + body


def _encode(kind: AddressKind, payload: bytes) -> str:
    if not isinstance(payload, bytes | bytearray) or len(payload) != _PAYLOAD_BYTES:
        raise DecodeError(f"{kind} payload must be exactly 32 bytes")
    body = PREFIXES[kind] + bytes(payload)
    return base58_encode(body + sha256d(body)[:_CHECKSUM_BYTES])


def _decode(kind: AddressKind, text: str) -> bytes:
    """Payload of ``text`` if it is a valid ``kind`` string; AddressError otherwise."""
    prefix = PREFIXES[kind]
    try:
        raw = base58_decode(text)
    except DecodeError as exc:
        raise AddressError(f"not a valid {kind} string: {exc}") from exc
    if len(raw) != len(prefix) + _PAYLOAD_BYTES + _CHECKSUM_BYTES:
        raise AddressError(f"not a valid {kind} string: decoded length {len(raw)}")
    body, checksum = raw[:-_CHECKSUM_BYTES], raw[-_CHECKSUM_BYTES:]
    if not body.startswith(prefix):
        raise AddressError(f"not a valid {kind} string: wrong prefix")
    if sha256d(body)[:_CHECKSUM_BYTES] != checksum:
        raise AddressError(f"not a valid {kind} string: bad checksum")
    return body[len(prefix) :]


def address_kind(text: str) -> AddressKind:
    """Which of the six kinds ``text`` is, after full validation. AddressError if none."""
    for kind in PREFIXES:
        try:
            _decode(kind, text)
        except AddressError:
            continue
        return kind
    raise AddressError(f"not a valid Factom address or key string: {text!r}")


def rcd1(public_key32: bytes) -> bytes:
    """RCD type 1, 33 bytes: ``01 || public key`` (section 3.2). DecodeError if not 32 bytes."""
    if not isinstance(public_key32, bytes | bytearray) or len(public_key32) != _PAYLOAD_BYTES:
        raise DecodeError("an ed25519 public key must be exactly 32 bytes")
    return bytes([RCD1_TYPE]) + bytes(public_key32)


def rcd_hash(public_key32: bytes) -> bytes:
    """The 32-byte Factoid address inside transactions: ``SHA256d(rcd1(public_key32))``."""
    return sha256d(rcd1(public_key32))


def fct_public_address(rcd_hash32: bytes) -> str:
    """``FA...`` string of a 32-byte RCD hash."""
    return _encode("FA", rcd_hash32)


def rcd_hash_from_fct_address(text: str) -> bytes:
    """32-byte RCD hash inside an ``FA...`` string. AddressError if invalid."""
    return _decode("FA", text)


def fct_address_from_public_key(public_key32: bytes) -> str:
    """``FA...`` string of an ed25519 public key (via its RCD1 hash)."""
    return fct_public_address(rcd_hash(public_key32))


def fct_secret_address(seed32: bytes) -> str:
    """``Fs...`` string of a 32-byte ed25519 seed."""
    return _encode("Fs", seed32)


def seed_from_fct_secret(text: str) -> bytes:
    """32-byte seed inside an ``Fs...`` string. AddressError if invalid."""
    return _decode("Fs", text)


def ec_public_address(public_key32: bytes) -> str:
    """``EC...`` string of a raw 32-byte ed25519 public key (no hashing)."""
    return _encode("EC", public_key32)


def public_key_from_ec_address(text: str) -> bytes:
    """32-byte public key inside an ``EC...`` string. AddressError if invalid."""
    return _decode("EC", text)


def ec_secret_address(seed32: bytes) -> str:
    """``Es...`` string of a 32-byte ed25519 seed."""
    return _encode("Es", seed32)


def seed_from_ec_secret(text: str) -> bytes:
    """32-byte seed inside an ``Es...`` string. AddressError if invalid."""
    return _decode("Es", text)


def identity_public_key(pub32: bytes) -> str:
    """``idpub...`` string of a raw 32-byte ed25519 public key."""
    return _encode("idpub", pub32)


def public_key_from_identity(text: str) -> bytes:
    """32-byte public key inside an ``idpub...`` string. AddressError if invalid."""
    return _decode("idpub", text)


def identity_secret_key(seed32: bytes) -> str:
    """``idsec...`` string of a 32-byte ed25519 seed."""
    return _encode("idsec", seed32)


def seed_from_identity_secret(text: str) -> bytes:
    """32-byte seed inside an ``idsec...`` string. AddressError if invalid."""
    return _decode("idsec", text)


def public_address_for_secret(secret: str) -> str:
    """Public string matching a secret one: ``Fs``→``FA``, ``Es``→``EC``, ``idsec``→``idpub``.

    Raises:
        AddressError: ``secret`` is not a valid Fs/Es/idsec string.
    """
    kind = address_kind(secret)
    public_kind = _PUBLIC_FOR_SECRET.get(kind)
    if public_kind is None:
        raise AddressError(f"{kind} string is not a secret key")
    public_key = SigningKey.from_seed(_decode(kind, secret)).public_key
    if public_kind == "FA":
        return fct_address_from_public_key(public_key)
    return _encode(public_kind, public_key)
