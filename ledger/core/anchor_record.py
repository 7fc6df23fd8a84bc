"""Anchor payloads and signed anchor records (docs/formats.md §7.2, §7.3, §7.4).

Proof-of-work anchor payload (7.2), carried by an ``OP_RETURN`` output ``6a 28 <payload>``::

    "Fa" (46 61) | directory block height, 6 bytes big-endian | directory block KeyMR (32)

Window ("contract") commitment (our encoding of 7.3's ``setAnchor(height, merkleRoot)``),
carried by ``6a 42 <payload>``::

    "Fc" (46 63) | contract address (20) | lowest height, 6 bytes BE | highest height, 6 bytes BE
    | window Merkle root (32)

The window Merkle root is the Factom Merkle root (section 5.1) of the KeyMRs of the
directory blocks ``lowest..highest`` in height order.

Anchor records (7.4, version 2) are entries: content = compact JSON ``AnchorRecord`` with
Go's field order, ExtID[0] = the raw 64-byte ed25519 signature of the content by the
anchor key. Proof-of-work records go to ChainID(["FactomAnchorChain"]) with a ``Bitcoin``
object; window records to ChainID(["FactomEthereumAnchorChain"]) with an ``Ethereum``
object. Txids and block hashes of the proof-of-work chain are written in display order
(byte-reversed hex) as factomd's records hold Bitcoin hashes; contract fields carry ``0x``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ledger.core.blocks._codec import json_field, json_uint
from ledger.core.entry import Entry, chain_id_from_external_ids
from ledger.core.errors import DecodeError, LimitError, SignatureError
from ledger.core.hexbytes import from_hex, hash32_from_hex
from ledger.core.keys import SigningKey, verify_signature
from ledger.core.merkle import merkle_root

__all__ = [
    "ANCHOR_PAYLOAD_BYTES",
    "CONTRACT_CHAIN_ID",
    "POW_ANCHOR_CHAIN_ID",
    "WINDOW_PAYLOAD_BYTES",
    "AnchorRecord",
    "ContractRef",
    "PowRef",
    "WindowCommitment",
    "anchor_chain_first_entry",
    "contract_chain_first_entry",
    "decode_anchor_payload",
    "encode_anchor_payload",
    "parse_signed_record",
    "window_root",
]

POW_ANCHOR_EXT_ID = b"FactomAnchorChain"
CONTRACT_EXT_ID = b"FactomEthereumAnchorChain"
POW_ANCHOR_CHAIN_ID = chain_id_from_external_ids([POW_ANCHOR_EXT_ID])
CONTRACT_CHAIN_ID = chain_id_from_external_ids([CONTRACT_EXT_ID])
_POW_CHAIN_TEXT = (
    b"This is the Factom anchor chain, which records the anchors Factom puts on Bitcoin"
    b" and other networks.\n"
)
_CONTRACT_CHAIN_TEXT = (
    b"This is the window anchor chain, which records the Merkle roots of windows of"
    b" directory blocks anchored by the contract record.\n"
)

ANCHOR_TAG = b"Fa"
WINDOW_TAG = b"Fc"
ANCHOR_PAYLOAD_BYTES = 40
WINDOW_PAYLOAD_BYTES = 66
RECORD_VERSION = 2
_MAX_HEIGHT = 1 << 48


def anchor_chain_first_entry() -> Entry:
    """First entry of the proof-of-work anchor chain (factomd's, docs/formats.md §1.5)."""
    return Entry.first_entry([POW_ANCHOR_EXT_ID], _POW_CHAIN_TEXT)


def contract_chain_first_entry() -> Entry:
    """First entry of the window (contract) anchor chain."""
    return Entry.first_entry([CONTRACT_EXT_ID], _CONTRACT_CHAIN_TEXT)


def _height6(height: int) -> bytes:
    if isinstance(height, bool) or not isinstance(height, int) or not 0 <= height < _MAX_HEIGHT:
        raise DecodeError(f"height must fit 6 bytes, got {height!r}")
    return height.to_bytes(6, "big")


def _hash32(value: object, what: str) -> bytes:
    if not isinstance(value, bytes | bytearray) or len(value) != 32:
        raise DecodeError(f"{what} must be exactly 32 bytes")
    return bytes(value)


def encode_anchor_payload(height: int, keymr: bytes) -> bytes:
    """The 40-byte payload ``"Fa" | height (6 BE) | KeyMR`` (section 7.2)."""
    return ANCHOR_TAG + _height6(height) + _hash32(keymr, "KeyMR")


def decode_anchor_payload(payload: bytes) -> tuple[int, bytes]:
    """``(height, KeyMR)`` of a 40-byte anchor payload. DecodeError otherwise."""
    if len(payload) != ANCHOR_PAYLOAD_BYTES or payload[:2] != ANCHOR_TAG:
        raise DecodeError('not a 40-byte "Fa" anchor payload')
    return int.from_bytes(payload[2:8], "big"), bytes(payload[8:])


def window_root(keymrs: Sequence[bytes]) -> bytes:
    """Window Merkle root: Factom Merkle root over the KeyMRs in height order (7.3).

    Raises:
        LimitError: ``keymrs`` is empty.
    """
    if not keymrs:
        raise LimitError("a window holds at least one directory block")
    return merkle_root(list(keymrs))


@dataclass(frozen=True)
class WindowCommitment:
    """What the contract record commits to: a window of directory blocks and its root.

    Attributes:
        contract_address: 20 bytes naming the contract.
        height_min / height_max: inclusive range of directory block heights.
        window_mr: ``window_root`` of their KeyMRs (32 bytes).
    """

    contract_address: bytes
    height_min: int
    height_max: int
    window_mr: bytes

    def __post_init__(self) -> None:
        if not isinstance(self.contract_address, bytes) or len(self.contract_address) != 20:
            raise DecodeError("a contract address is 20 bytes")
        _height6(self.height_min)
        _height6(self.height_max)
        if self.height_min > self.height_max:
            raise DecodeError("window lowest height above its highest height")
        _hash32(self.window_mr, "window Merkle root")

    def payload(self) -> bytes:
        """The 66-byte payload (see the module docstring)."""
        return (
            WINDOW_TAG
            + self.contract_address
            + _height6(self.height_min)
            + _height6(self.height_max)
            + self.window_mr
        )

    @classmethod
    def from_payload(cls, payload: bytes) -> WindowCommitment:
        """Inverse of ``payload``. DecodeError for anything else."""
        if len(payload) != WINDOW_PAYLOAD_BYTES or payload[:2] != WINDOW_TAG:
            raise DecodeError('not a 66-byte "Fc" window payload')
        low, high = int.from_bytes(payload[22:28], "big"), int.from_bytes(payload[28:34], "big")
        return cls(bytes(payload[2:22]), low, high, bytes(payload[34:]))

    @property
    def address_hex(self) -> str:
        """``0x`` + 40 hex characters."""
        return "0x" + self.contract_address.hex()


@dataclass(frozen=True)
class PowRef:
    """Where a proof-of-work anchor sits (the record's ``Bitcoin`` object).

    ``txid`` and ``block_hash`` are display hex (byte-reversed); ``offset`` is the
    transaction's index in its block.
    """

    txid: str
    block_hash: str
    block_height: int
    offset: int
    address: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "Address": self.address,
            "TXID": self.txid,
            "BlockHeight": self.block_height,
            "BlockHash": self.block_hash,
            "Offset": self.offset,
        }

    @classmethod
    def from_json(cls, obj: Any) -> PowRef:
        return cls(
            txid=_text(json_field(obj, "TXID", "Bitcoin")),
            block_hash=_text(json_field(obj, "BlockHash", "Bitcoin")),
            block_height=json_uint(json_field(obj, "BlockHeight", "Bitcoin"), "BlockHeight"),
            offset=json_uint(json_field(obj, "Offset", "Bitcoin"), "Offset"),
            address=_text(obj.get("Address", "")),
        )


@dataclass(frozen=True)
class ContractRef:
    """Where a window commitment sits (the record's ``Ethereum`` object); ``0x`` hex."""

    contract_address: str
    txid: str
    block_hash: str
    block_height: int
    tx_index: int

    def to_json(self) -> dict[str, Any]:
        return {
            "ContractAddress": self.contract_address,
            "TxID": self.txid,
            "BlockHeight": self.block_height,
            "BlockHash": self.block_hash,
            "TxIndex": self.tx_index,
        }

    @classmethod
    def from_json(cls, obj: Any) -> ContractRef:
        return cls(
            contract_address=_text(json_field(obj, "ContractAddress", "Ethereum")),
            txid=_text(json_field(obj, "TxID", "Ethereum")),
            block_hash=_text(json_field(obj, "BlockHash", "Ethereum")),
            block_height=json_uint(json_field(obj, "BlockHeight", "Ethereum"), "BlockHeight"),
            tx_index=json_uint(json_field(obj, "TxIndex", "Ethereum"), "TxIndex"),
        )


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise DecodeError("anchor record text field must be a string")
    return value


@dataclass(frozen=True)
class AnchorRecord:
    """One anchor record (section 7.4). Exactly one of ``pow`` / ``contract`` is set.

    Attributes:
        db_height, keymr: the directory block anchored (for a window record: the highest).
        record_height: the directory block height the record was meant to go into.
        window: the window (contract records only).
    """

    db_height: int
    keymr: bytes
    record_height: int
    pow: PowRef | None = None
    contract: ContractRef | None = None
    window: WindowCommitment | None = None
    version: int = RECORD_VERSION

    def __post_init__(self) -> None:
        _hash32(self.keymr, "KeyMR")
        if (self.pow is None) == (self.contract is None):
            raise DecodeError("an anchor record has exactly one of Bitcoin / Ethereum")
        if (self.contract is None) != (self.window is None):
            raise DecodeError("a window record needs its window, and only it")

    def to_content(self) -> bytes:
        """Compact JSON in Go's field order (the bytes that are signed)."""
        obj: dict[str, Any] = {
            "AnchorRecordVer": self.version,
            "DBHeight": self.db_height,
            "KeyMR": self.keymr.hex(),
        }
        if self.window is not None:
            obj["DBHeightMax"] = self.window.height_max
            obj["DBHeightMin"] = self.window.height_min
            obj["WindowMR"] = self.window.window_mr.hex()
        obj["RecordHeight"] = self.record_height
        if self.pow is not None:
            obj["Bitcoin"] = self.pow.to_json()
        if self.contract is not None:
            obj["Ethereum"] = self.contract.to_json()
        return json.dumps(obj, separators=(",", ":")).encode()

    @classmethod
    def from_content(cls, content: bytes) -> AnchorRecord:
        """Parse record JSON. DecodeError for bad JSON, missing or mistyped fields."""
        try:
            obj = json.loads(content)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            # RecursionError: nesting deeper than the parser's stack (hostile content)
            raise DecodeError(f"anchor record is not JSON: {exc}") from exc
        what = "anchor record"
        contract = ContractRef.from_json(obj["Ethereum"]) if "Ethereum" in _obj(obj) else None
        window = None
        if contract is not None:
            window = WindowCommitment(
                _address(contract.contract_address),
                json_uint(json_field(obj, "DBHeightMin", what), "DBHeightMin"),
                json_uint(json_field(obj, "DBHeightMax", what), "DBHeightMax"),
                hash32_from_hex(json_field(obj, "WindowMR", what), "WindowMR"),
            )
        return cls(
            db_height=json_uint(json_field(obj, "DBHeight", what), "DBHeight", bits=32),
            keymr=hash32_from_hex(json_field(obj, "KeyMR", what), "KeyMR"),
            record_height=json_uint(obj.get("RecordHeight", 0), "RecordHeight", bits=32),
            pow=PowRef.from_json(obj["Bitcoin"]) if "Bitcoin" in obj else None,
            contract=contract,
            window=window,
            version=json_uint(json_field(obj, "AnchorRecordVer", what), "AnchorRecordVer"),
        )

    def to_entry(self, key: SigningKey) -> Entry:
        """The record as an entry of its chain, signed with ``key`` (ExtID[0])."""
        content = self.to_content()
        chain_id = POW_ANCHOR_CHAIN_ID if self.pow is not None else CONTRACT_CHAIN_ID
        return Entry(chain_id, (key.sign(content),), content)


def _obj(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise DecodeError("anchor record must be a JSON object")
    return value


def _address(text: str) -> bytes:
    return from_hex(text.removeprefix("0x"), "ContractAddress", size=20)


def parse_signed_record(entry: Entry, trusted_keys: Iterable[bytes]) -> AnchorRecord:
    """The record in ``entry`` if one of ``trusted_keys`` signed it (version 2).

    The record kind must match the chain: ``Bitcoin`` records in the proof-of-work anchor
    chain, ``Ethereum`` (window) records in the contract chain.

    Raises:
        SignatureError: no ExtID[0] signature by a trusted key over the content.
        DecodeError: the content is not a valid record, or sits in the wrong chain.
    """
    if not entry.external_ids or not any(
        verify_signature(key, entry.content, entry.external_ids[0]) for key in trusted_keys
    ):
        raise SignatureError("anchor record is not signed by a trusted anchor key")
    record = AnchorRecord.from_content(entry.content)
    expected = POW_ANCHOR_CHAIN_ID if record.pow is not None else CONTRACT_CHAIN_ID
    if entry.chain_id != expected:
        raise DecodeError("anchor record kind does not match its chain")
    return record
