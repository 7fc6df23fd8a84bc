"""Entry credit block (ECBlock): header, body objects, HeaderHash, full hash (docs/formats.md §5.6).

Header (factomd ``common/entryCreditBlock/ecblockHeader.go``)::

    32      chain ID 00..0c
    32      BodyHash = SHA256(body)
    32      PrevHeaderHash   (zero at genesis)
    32      PrevFullHash     (zero at genesis)
    4       DBHeight
    varInt  HeaderExpansionSize, then that many bytes
    8       ObjectCount (markers included)
    8       BodySize

Body objects, each an ECID byte then its payload:

    0x00 server index number   1 byte
    0x01 minute number         1 byte (1..10, appended at each minute end)
    0x02 chain commit          200 bytes (``ledger.core.commit.CommitChain``)
    0x03 entry commit          136 bytes (``ledger.core.commit.CommitEntry``)
    0x04 balance increase      EC public key 32 || TXID 32 || varInt index || varInt NumEC

HeaderHash = SHA256(header) goes into the DBlock and is the block's key; full hash =
SHA256(header || body).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from ledger.core.blocks._codec import Reader, check_hash, check_uint, uint_bytes, varint_bytes
from ledger.core.commit import COMMIT_CHAIN_BYTES, COMMIT_ENTRY_BYTES, CommitChain, CommitEntry
from ledger.core.errors import DecodeError
from ledger.core.hashing import ZERO_HASH, sha256

__all__ = [
    "EC_CHAIN_ID",
    "BalanceIncrease",
    "ECObject",
    "EntryCreditBlock",
    "MinuteNumber",
    "ServerIndexNumber",
    "ec_object_to_json",
]

EC_CHAIN_ID = bytes(31) + b"\x0c"
_SERVER_INDEX, _MINUTE, _CHAIN_COMMIT, _ENTRY_COMMIT, _BALANCE_INCREASE = range(5)


@dataclass(frozen=True)
class ServerIndexNumber:
    """ECID 0x00: server index (one byte)."""

    index: int

    def __post_init__(self) -> None:
        check_uint(self.index, 8, "server index")


@dataclass(frozen=True)
class MinuteNumber:
    """ECID 0x01: end of minute ``minute`` (1..10 in blocks factomd builds; any byte parses)."""

    minute: int

    def __post_init__(self) -> None:
        check_uint(self.minute, 8, "minute")


@dataclass(frozen=True)
class BalanceIncrease:
    """ECID 0x04 (M1 era): EC credited by a coin transaction.

    Attributes:
        ec_public_key: 32 bytes. txid: 32 bytes (the transaction's *full* hash in M1 data).
        index: output index in the transaction. num_ec: credits added.
    """

    ec_public_key: bytes
    txid: bytes
    index: int
    num_ec: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "ec_public_key", check_hash(self.ec_public_key, "ec_public_key"))
        object.__setattr__(self, "txid", check_hash(self.txid, "txid"))
        check_uint(self.index, 64, "index")
        check_uint(self.num_ec, 64, "num_ec")


ECObject = ServerIndexNumber | MinuteNumber | CommitChain | CommitEntry | BalanceIncrease


def _marshal_object(obj: ECObject) -> bytes:
    if isinstance(obj, ServerIndexNumber):
        return bytes([_SERVER_INDEX, obj.index])
    if isinstance(obj, MinuteNumber):
        return bytes([_MINUTE, obj.minute])
    if isinstance(obj, CommitChain):
        return bytes([_CHAIN_COMMIT]) + obj.marshal()
    if isinstance(obj, CommitEntry):
        return bytes([_ENTRY_COMMIT]) + obj.marshal()
    tail = varint_bytes(obj.index) + varint_bytes(obj.num_ec)
    return bytes([_BALANCE_INCREASE]) + obj.ec_public_key + obj.txid + tail


def _read_object(reader: Reader) -> ECObject:
    ecid = reader.uint(1)
    if ecid == _SERVER_INDEX:
        return ServerIndexNumber(reader.uint(1))
    if ecid == _MINUTE:
        return MinuteNumber(reader.uint(1))
    if ecid == _CHAIN_COMMIT:
        return CommitChain.unmarshal(reader.take(COMMIT_CHAIN_BYTES))
    if ecid == _ENTRY_COMMIT:
        return CommitEntry.unmarshal(reader.take(COMMIT_ENTRY_BYTES))
    if ecid == _BALANCE_INCREASE:
        key, txid = reader.hash32(), reader.hash32()
        index = reader.varint()
        return BalanceIncrease(key, txid, index, reader.varint())
    raise DecodeError(f"unknown entry credit object type 0x{ecid:02x}")


def _millitime_hex(timestamp_ms: int) -> str:
    return timestamp_ms.to_bytes(6, "big").hex()


def ec_object_to_json(obj: ECObject) -> dict[str, Any]:
    """JSON of one body object as factomd emits it inside ``body.entries``."""
    if isinstance(obj, ServerIndexNumber):
        return {"serverindexnumber": obj.index}
    if isinstance(obj, MinuteNumber):
        return {"number": obj.minute}
    if isinstance(obj, BalanceIncrease):
        return {
            "ecpubkey": obj.ec_public_key.hex(),
            "txid": obj.txid.hex(),
            "index": obj.index,
            "numec": obj.num_ec,
        }
    result: dict[str, Any] = {"version": 0, "millitime": _millitime_hex(obj.timestamp_ms)}
    if isinstance(obj, CommitChain):
        result |= {"chainidhash": obj.chain_id_hash.hex(), "weld": obj.weld.hex()}
    return result | {
        "entryhash": obj.entry_hash.hex(),
        "credits": obj.credits,
        "ecpubkey": obj.ec_public_key.hex(),
        "sig": obj.signature.hex(),
    }


@dataclass(frozen=True)
class EntryCreditBlock:
    """An entry credit block; BodyHash, ObjectCount and BodySize derive from ``objects``.

    Attributes:
        height: DBHeight.
        prev_header_hash / prev_full_hash: of ECBlock ``height - 1`` (zero at genesis).
        objects: body objects in order.
        header_expansion: opaque header expansion bytes (normally empty).
    """

    height: int
    prev_header_hash: bytes
    prev_full_hash: bytes
    objects: tuple[ECObject, ...] = ()
    header_expansion: bytes = b""

    def __post_init__(self) -> None:
        check_uint(self.height, 32, "height")
        for name in ("prev_header_hash", "prev_full_hash"):
            object.__setattr__(self, name, check_hash(getattr(self, name), name))
        object.__setattr__(self, "objects", tuple(self.objects))
        if not all(isinstance(o, ECObject) for o in self.objects):
            raise DecodeError("objects must be entry credit block objects")
        if not isinstance(self.header_expansion, bytes | bytearray):
            raise DecodeError("header_expansion must be bytes")
        object.__setattr__(self, "header_expansion", bytes(self.header_expansion))

    @classmethod
    def build(
        cls, *, prev: EntryCreditBlock | None, objects: tuple[ECObject, ...] = ()
    ) -> EntryCreditBlock:
        """The next ECBlock after ``prev`` (genesis, height 0 and zero links, if None)."""
        if prev is None:
            return cls(0, ZERO_HASH, ZERO_HASH, objects)
        return cls(prev.height + 1, prev.header_hash(), prev.full_hash(), objects)

    def body(self) -> bytes:
        """Concatenated body objects."""
        return b"".join(_marshal_object(o) for o in self.objects)

    def body_hash(self) -> bytes:
        """SHA256(body)."""
        return sha256(self.body())

    def header(self) -> bytes:
        """Header bytes (chain ID through BodySize)."""
        body = self.body()
        return b"".join(
            (
                EC_CHAIN_ID,
                sha256(body),
                self.prev_header_hash,
                self.prev_full_hash,
                uint_bytes(self.height, 4, "height"),
                varint_bytes(len(self.header_expansion)),
                self.header_expansion,
                uint_bytes(len(self.objects), 8, "object count"),
                uint_bytes(len(body), 8, "body size"),
            )
        )

    def marshal(self) -> bytes:
        """``header || body`` (the ``rawdata`` of ``ecblock-by-height``)."""
        return self.header() + self.body()

    @classmethod
    def unmarshal(cls, data: bytes) -> EntryCreditBlock:
        """Parse a full ECBlock.

        Raises:
            DecodeError: wrong chain ID, short data, unknown ECID, a BodyHash / BodySize /
                ObjectCount that does not match the body, or trailing bytes.
            LimitError: a commit whose credits are out of range.
        """
        reader = Reader(data, "entry credit block")
        if reader.hash32() != EC_CHAIN_ID:
            raise DecodeError("entry credit block does not start with the EC chain ID")
        body_hash, prev_header, prev_full = reader.hash32(), reader.hash32(), reader.hash32()
        height = reader.uint(4)
        expansion = reader.take(reader.varint())
        count, body_size = reader.uint(8), reader.uint(8)
        if body_size != reader.remaining:
            raise DecodeError(f"EC block: body size {body_size}, {reader.remaining} bytes left")
        objects = tuple(_read_object(reader) for _ in range(count))
        reader.expect_end()
        block = cls(height, prev_header, prev_full, objects, expansion)
        if block.body_hash() != body_hash:
            raise DecodeError("EC block: stored BodyHash does not match the body")
        return block

    def header_hash(self) -> bytes:
        """SHA256(header): the DBlock entry, DB key and ``entrycredit-block`` key."""
        return sha256(self.header())

    def full_hash(self) -> bytes:
        """SHA256(header || body): the next block's PrevFullHash."""
        return sha256(self.marshal())

    def primary_key(self) -> bytes:
        """The key listed in the DBlock and used for lookups: the HeaderHash (section 9.3)."""
        return self.header_hash()

    def secondary_key(self) -> bytes:
        """The block's second lookup key: the full hash (section 9.3)."""
        return self.full_hash()

    def to_json(self) -> dict[str, Any]:
        """``ecblock`` object: header {bodyhash, prevheaderhash, prevfullhash, dbheight,
        headerexpansionarea (base64, as Go []byte), objectcount, bodysize, chainid, ecchainid},
        body {entries}, headerhash, fullhash."""
        return {
            "header": {
                "bodyhash": self.body_hash().hex(),
                "prevheaderhash": self.prev_header_hash.hex(),
                "prevfullhash": self.prev_full_hash.hex(),
                "dbheight": self.height,
                "headerexpansionarea": base64.b64encode(self.header_expansion).decode("ascii"),
                "objectcount": len(self.objects),
                "bodysize": len(self.body()),
                "chainid": EC_CHAIN_ID.hex(),
                "ecchainid": EC_CHAIN_ID.hex(),
            },
            "body": {"entries": [ec_object_to_json(o) for o in self.objects]},
            "headerhash": self.header_hash().hex(),
            "fullhash": self.full_hash().hex(),
        }
