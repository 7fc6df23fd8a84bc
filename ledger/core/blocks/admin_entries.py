"""Admin block entries: the kinds, their payloads and JSON (docs/formats.md §5.5).

Each entry starts with its AdminID byte (table in section 5.5); ``read_entry`` reads one
from a block body and ``marshal_entry`` writes one. Kinds above 0x0E are kept verbatim as
``OpaqueAdminEntry`` (varInt size + bytes, factomd's forward-compatible form). The server
fault kind 0x0A is never serialized into blocks and is rejected. The block around them is
``ledger.core.blocks.admin.AdminBlock``.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from ledger.core.addresses import fct_public_address
from ledger.core.blocks._codec import (
    Reader,
    check_bytes,
    check_hash,
    check_uint,
    uint_bytes,
    varint_bytes,
)
from ledger.core.errors import DecodeError

__all__ = [
    "ADMIN_CHAIN_ID",
    "AdminEntry",
    "AuthorityEfficiency",
    "AuthorityFactoidAddress",
    "BitcoinAnchorKey",
    "CoinbaseDescriptor",
    "CoinbaseDescriptorCancel",
    "DBSignature",
    "FederatedServerSigningKey",
    "MatryoshkaHash",
    "MinuteNumber",
    "OpaqueAdminEntry",
    "ServerCountIncrease",
    "ServerListChange",
    "entry_to_json",
    "marshal_entry",
    "read_entry",
]

ADMIN_CHAIN_ID = bytes(31) + b"\x0a"
_SERVER_FAULT_ID = 0x0A
_LAST_KNOWN_ID = 0x0E


def _hash_field(obj: object, name: str) -> None:
    object.__setattr__(obj, name, check_hash(getattr(obj, name), name))


@dataclass(frozen=True)
class MinuteNumber:
    """0x00, deprecated M1 minute marker: one byte."""

    minute: int
    admin_id: ClassVar[int] = 0x00

    def __post_init__(self) -> None:
        check_uint(self.minute, 8, "minute")

    def payload(self) -> bytes:
        return bytes([self.minute])

    @classmethod
    def read_payload(cls, reader: Reader) -> MinuteNumber:
        return cls(reader.uint(1))

    def json_fields(self) -> dict[str, Any]:
        return {"minutenumber": self.minute}


@dataclass(frozen=True)
class DBSignature:
    """0x01: a federated server's signature over the 113-byte header of DBlock N-1."""

    identity_chain_id: bytes
    public_key: bytes
    signature: bytes
    admin_id: ClassVar[int] = 0x01

    def __post_init__(self) -> None:
        _hash_field(self, "identity_chain_id")
        _hash_field(self, "public_key")
        object.__setattr__(self, "signature", check_bytes(self.signature, 64, "signature"))

    def payload(self) -> bytes:
        return self.identity_chain_id + self.public_key + self.signature

    @classmethod
    def read_payload(cls, reader: Reader) -> DBSignature:
        return cls(reader.hash32(), reader.hash32(), reader.take(64))

    def json_fields(self) -> dict[str, Any]:
        return {
            "identityadminchainid": self.identity_chain_id.hex(),
            "prevdbsig": {"pub": self.public_key.hex(), "sig": self.signature.hex()},
        }


@dataclass(frozen=True)
class MatryoshkaHash:
    """0x02 (reveal) or 0x03 (add/replace) Matryoshka hash: chain ID 32 || hash 32."""

    kind: int
    identity_chain_id: bytes
    mhash: bytes

    def __post_init__(self) -> None:
        if self.kind not in (0x02, 0x03):
            raise DecodeError("MatryoshkaHash kind must be 0x02 or 0x03")
        _hash_field(self, "identity_chain_id")
        _hash_field(self, "mhash")

    @property
    def admin_id(self) -> int:
        return self.kind

    def payload(self) -> bytes:
        return self.identity_chain_id + self.mhash

    def json_fields(self) -> dict[str, Any]:
        return {"identitychainid": self.identity_chain_id.hex(), "mhash": self.mhash.hex()}


@dataclass(frozen=True)
class ServerCountIncrease:
    """0x04: increase the server count by ``amount`` (one byte)."""

    amount: int
    admin_id: ClassVar[int] = 0x04

    def __post_init__(self) -> None:
        check_uint(self.amount, 8, "amount")

    def payload(self) -> bytes:
        return bytes([self.amount])

    @classmethod
    def read_payload(cls, reader: Reader) -> ServerCountIncrease:
        return cls(reader.uint(1))

    def json_fields(self) -> dict[str, Any]:
        return {"amount": self.amount}


@dataclass(frozen=True)
class ServerListChange:
    """0x05 add federated, 0x06 add audit, 0x07 remove federated: chain ID 32 || DBHeight u32."""

    kind: int
    identity_chain_id: bytes
    db_height: int

    def __post_init__(self) -> None:
        if self.kind not in (0x05, 0x06, 0x07):
            raise DecodeError("ServerListChange kind must be 0x05, 0x06 or 0x07")
        _hash_field(self, "identity_chain_id")
        check_uint(self.db_height, 32, "db_height")

    @property
    def admin_id(self) -> int:
        return self.kind

    def payload(self) -> bytes:
        return self.identity_chain_id + uint_bytes(self.db_height, 4, "db_height")

    def json_fields(self) -> dict[str, Any]:
        return {"identitychainid": self.identity_chain_id.hex(), "dbheight": self.db_height}


@dataclass(frozen=True)
class FederatedServerSigningKey:
    """0x08: chain ID 32 || priority 1 || ed25519 public key 32 || DBHeight u32 (69 bytes)."""

    identity_chain_id: bytes
    priority: int
    public_key: bytes
    db_height: int
    admin_id: ClassVar[int] = 0x08

    def __post_init__(self) -> None:
        _hash_field(self, "identity_chain_id")
        _hash_field(self, "public_key")
        check_uint(self.priority, 8, "priority")
        check_uint(self.db_height, 32, "db_height")

    def payload(self) -> bytes:
        return (
            self.identity_chain_id
            + bytes([self.priority])
            + self.public_key
            + uint_bytes(self.db_height, 4, "db_height")
        )

    @classmethod
    def read_payload(cls, reader: Reader) -> FederatedServerSigningKey:
        return cls(reader.hash32(), reader.uint(1), reader.hash32(), reader.uint(4))

    def json_fields(self) -> dict[str, Any]:
        return {
            "identitychainid": self.identity_chain_id.hex(),
            "keypriority": self.priority,
            "publickey": self.public_key.hex(),
            "dbheight": self.db_height,
        }


@dataclass(frozen=True)
class BitcoinAnchorKey:
    """0x09: chain ID 32 || priority 1 || type 1 (0 P2PKH, 1 P2SH) || HASH160 20 (54 bytes)."""

    identity_chain_id: bytes
    priority: int
    key_type: int
    hash160: bytes
    admin_id: ClassVar[int] = 0x09

    def __post_init__(self) -> None:
        _hash_field(self, "identity_chain_id")
        check_uint(self.priority, 8, "priority")
        check_uint(self.key_type, 8, "key_type")
        object.__setattr__(self, "hash160", check_bytes(self.hash160, 20, "hash160"))

    def payload(self) -> bytes:
        return self.identity_chain_id + bytes([self.priority, self.key_type]) + self.hash160

    @classmethod
    def read_payload(cls, reader: Reader) -> BitcoinAnchorKey:
        return cls(reader.hash32(), reader.uint(1), reader.uint(1), reader.take(20))

    def json_fields(self) -> dict[str, Any]:
        return {
            "identitychainid": self.identity_chain_id.hex(),
            "keypriority": self.priority,
            "keytype": self.key_type,
            "ecdsapublickey": self.hash160.hex(),
        }


@dataclass(frozen=True)
class CoinbaseDescriptor:
    """0x0B: varInt size || outputs (varInt amount || 32-byte RCD hash)..."""

    outputs: tuple[tuple[int, bytes], ...]
    admin_id: ClassVar[int] = 0x0B

    def __post_init__(self) -> None:
        outputs = tuple(
            (check_uint(a, 64, "amount"), check_hash(h, "rcd hash")) for a, h in self.outputs
        )
        object.__setattr__(self, "outputs", outputs)

    def payload(self) -> bytes:
        return _sized(b"".join(varint_bytes(a) + h for a, h in self.outputs))

    @classmethod
    def read_payload(cls, reader: Reader) -> CoinbaseDescriptor:
        body = Reader(reader.take(reader.varint()), "coinbase descriptor")
        outputs = []
        while body.remaining:
            amount = body.varint()
            outputs.append((amount, body.hash32()))
        return cls(tuple(outputs))

    def json_fields(self) -> dict[str, Any]:
        return {
            "outputs": [
                {"amount": a, "address": h.hex(), "useraddress": fct_public_address(h)}
                for a, h in self.outputs
            ]
        }


@dataclass(frozen=True)
class CoinbaseDescriptorCancel:
    """0x0C: varInt size || varInt descriptor height || varInt output index."""

    descriptor_height: int
    descriptor_index: int
    admin_id: ClassVar[int] = 0x0C

    def __post_init__(self) -> None:
        check_uint(self.descriptor_height, 32, "descriptor_height")
        check_uint(self.descriptor_index, 32, "descriptor_index")

    def payload(self) -> bytes:
        return _sized(varint_bytes(self.descriptor_height) + varint_bytes(self.descriptor_index))

    @classmethod
    def read_payload(cls, reader: Reader) -> CoinbaseDescriptorCancel:
        body = Reader(reader.take(reader.varint()), "coinbase descriptor cancel")
        height, index = body.varint(), body.varint()
        body.expect_end()
        if height >= 1 << 32 or index >= 1 << 32:
            raise DecodeError("coinbase descriptor cancel: value exceeds 32 bits")
        return cls(height, index)

    def json_fields(self) -> dict[str, Any]:
        # factomd's struct tag for the index is malformed, so Go emits the field name.
        return {
            "descriptor_height": self.descriptor_height,
            "DescriptorIndex": self.descriptor_index,
        }


@dataclass(frozen=True)
class AuthorityFactoidAddress:
    """0x0D: varInt size (64) || identity chain ID 32 || RCD hash 32."""

    identity_chain_id: bytes
    rcd_hash: bytes
    admin_id: ClassVar[int] = 0x0D

    def __post_init__(self) -> None:
        _hash_field(self, "identity_chain_id")
        _hash_field(self, "rcd_hash")

    def payload(self) -> bytes:
        return _sized(self.identity_chain_id + self.rcd_hash)

    @classmethod
    def read_payload(cls, reader: Reader) -> AuthorityFactoidAddress:
        body = Reader(reader.take(reader.varint()), "authority factoid address")
        entry = cls(body.hash32(), body.hash32())
        body.expect_end()
        return entry

    def json_fields(self) -> dict[str, Any]:
        return {
            "IdentityChainID": self.identity_chain_id.hex(),
            "FactoidAddress": self.rcd_hash.hex(),
        }


@dataclass(frozen=True)
class AuthorityEfficiency:
    """0x0E: varInt size (34) || identity chain ID 32 || efficiency u16 (10000 = 100%)."""

    identity_chain_id: bytes
    efficiency: int
    admin_id: ClassVar[int] = 0x0E

    def __post_init__(self) -> None:
        _hash_field(self, "identity_chain_id")
        check_uint(self.efficiency, 16, "efficiency")

    def payload(self) -> bytes:
        return _sized(self.identity_chain_id + uint_bytes(self.efficiency, 2, "efficiency"))

    @classmethod
    def read_payload(cls, reader: Reader) -> AuthorityEfficiency:
        body = Reader(reader.take(reader.varint()), "authority efficiency")
        entry = cls(body.hash32(), body.uint(2))
        body.expect_end()
        return entry

    def json_fields(self) -> dict[str, Any]:
        return {"IdentityChainID": self.identity_chain_id.hex(), "Efficiency": self.efficiency}


@dataclass(frozen=True)
class OpaqueAdminEntry:
    """Any AdminID above 0x0E: varInt size || opaque bytes (factomd ForwardCompatibleEntry)."""

    kind: int
    data: bytes

    def __post_init__(self) -> None:
        check_uint(self.kind, 8, "kind")
        if self.kind <= _LAST_KNOWN_ID:
            raise DecodeError(f"admin kind 0x{self.kind:02x} has its own entry class")
        if not isinstance(self.data, bytes | bytearray):
            raise DecodeError("data must be bytes")
        object.__setattr__(self, "data", bytes(self.data))

    @property
    def admin_id(self) -> int:
        return self.kind

    def payload(self) -> bytes:
        return _sized(self.data)

    def json_fields(self) -> dict[str, Any]:
        return {"size": len(self.data), "data": base64.b64encode(self.data).decode("ascii")}


AdminEntry = (
    MinuteNumber
    | DBSignature
    | MatryoshkaHash
    | ServerCountIncrease
    | ServerListChange
    | FederatedServerSigningKey
    | BitcoinAnchorKey
    | CoinbaseDescriptor
    | CoinbaseDescriptorCancel
    | AuthorityFactoidAddress
    | AuthorityEfficiency
    | OpaqueAdminEntry
)


def _sized(body: bytes) -> bytes:
    return varint_bytes(len(body)) + body


def marshal_entry(entry: AdminEntry) -> bytes:
    """AdminID byte + payload of one entry."""
    return bytes([entry.admin_id]) + entry.payload()


def entry_to_json(entry: AdminEntry) -> dict[str, Any]:
    """JSON of one admin entry: ``{"adminidtype": n, ...kind fields}`` as factomd."""
    return {"adminidtype": entry.admin_id, **entry.json_fields()}


_READERS: dict[int, Callable[[Reader], AdminEntry]] = {
    0x00: MinuteNumber.read_payload,
    0x01: DBSignature.read_payload,
    0x02: lambda r: MatryoshkaHash(0x02, r.hash32(), r.hash32()),
    0x03: lambda r: MatryoshkaHash(0x03, r.hash32(), r.hash32()),
    0x04: ServerCountIncrease.read_payload,
    0x05: lambda r: ServerListChange(0x05, r.hash32(), r.uint(4)),
    0x06: lambda r: ServerListChange(0x06, r.hash32(), r.uint(4)),
    0x07: lambda r: ServerListChange(0x07, r.hash32(), r.uint(4)),
    0x08: FederatedServerSigningKey.read_payload,
    0x09: BitcoinAnchorKey.read_payload,
    0x0B: CoinbaseDescriptor.read_payload,
    0x0C: CoinbaseDescriptorCancel.read_payload,
    0x0D: AuthorityFactoidAddress.read_payload,
    0x0E: AuthorityEfficiency.read_payload,
}


def read_entry(reader: Reader) -> AdminEntry:
    """One entry at ``reader``'s position. DecodeError for kind 0x0a or short data."""
    kind = reader.uint(1)
    if kind == _SERVER_FAULT_ID:
        raise DecodeError("admin entry 0x0a (server fault) is not allowed in blocks")
    read = _READERS.get(kind)
    if read is not None:
        return read(reader)
    return OpaqueAdminEntry(kind, reader.take(reader.varint()))
