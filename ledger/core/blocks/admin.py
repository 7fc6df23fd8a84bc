"""Admin block (ABlock): header, body, LookupHash, BackReferenceHash (docs/formats.md §5.5).

Header (factomd ``common/adminBlock/adminBlockHeader.go``)::

    32      chain ID 00..0a
    32      PrevBackRefHash   (BackReferenceHash of ABlock N-1; zero at genesis)
    4       DBHeight
    varInt  HeaderExpansionSize, then that many bytes
    4       MessageCount
    4       BodySize

Body: the entries back to back (``ledger.core.blocks.admin_entries``).
LookupHash = SHA256(whole block) goes into the DBlock; BackReferenceHash =
SHA512Half(whole block) goes into the next ABlock.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from ledger.core.blocks._codec import Reader, check_hash, check_uint, uint_bytes, varint_bytes
from ledger.core.blocks.admin_entries import (
    ADMIN_CHAIN_ID,
    AdminEntry,
    DBSignature,
    entry_to_json,
    marshal_entry,
    read_entry,
)
from ledger.core.errors import DecodeError
from ledger.core.hashing import sha256, sha512_half

__all__ = ["AdminBlock"]


@dataclass(frozen=True)
class AdminBlock:
    """An admin block; MessageCount and BodySize derive from ``entries``.

    Attributes:
        height: DBHeight.
        prev_back_ref_hash: BackReferenceHash of the previous ABlock (zero at genesis).
        entries: admin entries in body order.
        header_expansion: opaque header expansion bytes (normally empty).
    """

    height: int
    prev_back_ref_hash: bytes
    entries: tuple[AdminEntry, ...] = ()
    header_expansion: bytes = b""

    def __post_init__(self) -> None:
        check_uint(self.height, 32, "height")
        object.__setattr__(
            self, "prev_back_ref_hash", check_hash(self.prev_back_ref_hash, "prev_back_ref_hash")
        )
        object.__setattr__(self, "entries", tuple(self.entries))
        if not all(isinstance(e, AdminEntry) for e in self.entries):
            raise DecodeError("entries must be admin entry values")
        if not isinstance(self.header_expansion, bytes | bytearray):
            raise DecodeError("header_expansion must be bytes")
        object.__setattr__(self, "header_expansion", bytes(self.header_expansion))

    @classmethod
    def build(cls, *, prev: AdminBlock | None, entries: tuple[AdminEntry, ...] = ()) -> AdminBlock:
        """The next ABlock after ``prev`` (genesis, height 0 and zero back-reference, if None)."""
        if prev is None:
            return cls(0, bytes(32), entries)
        return cls(prev.height + 1, prev.back_reference_hash(), entries)

    def body(self) -> bytes:
        """Concatenated entries."""
        return b"".join(marshal_entry(e) for e in self.entries)

    def header(self) -> bytes:
        """Header bytes (chain ID through BodySize)."""
        return b"".join(
            (
                ADMIN_CHAIN_ID,
                self.prev_back_ref_hash,
                uint_bytes(self.height, 4, "height"),
                varint_bytes(len(self.header_expansion)),
                self.header_expansion,
                uint_bytes(len(self.entries), 4, "message count"),
                uint_bytes(len(self.body()), 4, "body size"),
            )
        )

    def marshal(self) -> bytes:
        """``header || body`` (the ``rawdata`` of ``ablock-by-height``)."""
        return self.header() + self.body()

    @classmethod
    def unmarshal(cls, data: bytes) -> AdminBlock:
        """Parse a full ABlock.

        Raises:
            DecodeError: wrong chain ID, short data, unknown layout, a body size or message
                count that does not match the entries, or trailing bytes.
        """
        reader = Reader(data, "admin block")
        if reader.hash32() != ADMIN_CHAIN_ID:
            raise DecodeError("admin block does not start with the admin chain ID")
        prev, height = reader.hash32(), reader.uint(4)
        expansion = reader.take(reader.varint())
        count, body_size = reader.uint(4), reader.uint(4)
        if body_size != reader.remaining:
            raise DecodeError(f"admin block: body size {body_size}, {reader.remaining} bytes left")
        entries = tuple(read_entry(reader) for _ in range(count))
        reader.expect_end()
        return cls(height, prev, entries, expansion)

    def lookup_hash(self) -> bytes:
        """SHA256(whole block): the DBlock entry, DB key and ``admin-block`` lookup key."""
        return sha256(self.marshal())

    def back_reference_hash(self) -> bytes:
        """SHA512Half(whole block): the next ABlock's PrevBackRefHash."""
        return sha512_half(self.marshal())

    def primary_key(self) -> bytes:
        """The key listed in the DBlock and used for lookups: the LookupHash (section 9.3)."""
        return self.lookup_hash()

    def secondary_key(self) -> bytes:
        """The block's second lookup key: the BackReferenceHash (section 9.3)."""
        return self.back_reference_hash()

    def db_signatures(self) -> list[DBSignature]:
        """The 0x01 entries, in body order."""
        return [e for e in self.entries if isinstance(e, DBSignature)]

    def to_json(self) -> dict[str, Any]:
        """``ablock`` object: header {prevbackrefhash, dbheight, headerexpansionsize,
        headerexpansionarea (base64, as Go []byte), messagecount, bodysize, adminchainid,
        chainid}, abentries, backreferencehash, lookuphash."""
        return {
            "header": {
                "prevbackrefhash": self.prev_back_ref_hash.hex(),
                "dbheight": self.height,
                "headerexpansionsize": len(self.header_expansion),
                "headerexpansionarea": base64.b64encode(self.header_expansion).decode("ascii"),
                "messagecount": len(self.entries),
                "bodysize": len(self.body()),
                "adminchainid": ADMIN_CHAIN_ID.hex(),
                "chainid": ADMIN_CHAIN_ID.hex(),
            },
            "abentries": [entry_to_json(e) for e in self.entries],
            "backreferencehash": self.back_reference_hash().hex(),
            "lookuphash": self.lookup_hash().hex(),
        }
