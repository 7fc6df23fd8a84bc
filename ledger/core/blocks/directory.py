"""Directory block (DBlock): layout, BodyMR, KeyMR, full hash, node JSON
(docs/formats.md §5.2, §5.3).

Header, 113 bytes (factomd ``common/directoryBlock/directoryBlockHeader.go``)::

    1   version (0)
    4   network ID
    32  BodyMR
    32  PrevKeyMR      (zero at genesis)
    32  PrevFullHash   (zero at genesis)
    4   timestamp, minutes since the Unix epoch
    4   DBHeight
    4   BlockCount (number of body pairs)

Body: BlockCount x [chain ID 32 || KeyMR 32]; first the admin (``00..0a``, ABlock
LookupHash), EC (``00..0c``, ECBlock HeaderHash) and coin (``00..0f``, FBlock KeyMR)
blocks, then one pair per entry block sorted ascending by chain ID.

BodyMR = Merkle root of SHA256(chain ID || KeyMR) per pair (equal to the root over the
flat list [chain ID, KeyMR, ...] used by receipts); KeyMR = SHA256(SHA256(header) ||
BodyMR); full hash ("dbhash") = SHA256(header || body).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ledger.core.blocks._codec import Reader, check_hash, check_uint, uint_bytes
from ledger.core.blocks._keyed import KeyedBlock
from ledger.core.errors import DecodeError, LedgerFormatError
from ledger.core.hashing import ZERO_HASH, sha256
from ledger.core.merkle import merkle_levels, merkle_root

__all__ = [
    "ADMIN_CHAIN_ID",
    "COIN_CHAIN_ID",
    "DIRECTORY_CHAIN_ID",
    "DIRECTORY_HEADER_BYTES",
    "EC_CHAIN_ID",
    "MAIN_NETWORK_ID",
    "DBlockEntry",
    "DirectoryBlock",
]

ADMIN_CHAIN_ID = bytes(31) + b"\x0a"
EC_CHAIN_ID = bytes(31) + b"\x0c"
DIRECTORY_CHAIN_ID = bytes(31) + b"\x0d"
COIN_CHAIN_ID = bytes(31) + b"\x0f"
MAIN_NETWORK_ID = 0xFA92E5A2
DIRECTORY_HEADER_BYTES = 113
_SPECIAL_CHAIN_IDS = (ADMIN_CHAIN_ID, EC_CHAIN_ID, COIN_CHAIN_ID)


@dataclass(frozen=True)
class DBlockEntry:
    """One body pair: ``chain_id`` and the block's key (both raw 32 bytes)."""

    chain_id: bytes
    key_mr: bytes

    def __post_init__(self) -> None:
        object.__setattr__(self, "chain_id", check_hash(self.chain_id, "chain_id"))
        object.__setattr__(self, "key_mr", check_hash(self.key_mr, "key_mr"))

    def marshal(self) -> bytes:
        """``chain_id || key_mr`` (64 bytes)."""
        return self.chain_id + self.key_mr

    def to_json(self) -> dict[str, str]:
        """``{"chainid": hex, "keymr": hex}``."""
        return {"chainid": self.chain_id.hex(), "keymr": self.key_mr.hex()}


@dataclass(frozen=True)
class DirectoryBlock(KeyedBlock):
    """A directory block. BodyMR and BlockCount are derived from ``entries``.

    Attributes:
        height: DBHeight.
        timestamp_min: block start, whole minutes since the Unix epoch (uint32).
        network_id: e.g. ``MAIN_NETWORK_ID``.
        prev_key_mr / prev_full_hash: of DBlock ``height - 1`` (zero at genesis).
        entries: body pairs in body order (use ``build`` to get the canonical order).
    """

    height: int
    timestamp_min: int
    network_id: int
    prev_key_mr: bytes
    prev_full_hash: bytes
    entries: tuple[DBlockEntry, ...]
    version: int = 0

    def __post_init__(self) -> None:
        for name, bits in (("height", 32), ("timestamp_min", 32), ("network_id", 32)):
            check_uint(getattr(self, name), bits, name)
        check_uint(self.version, 8, "version")
        object.__setattr__(self, "prev_key_mr", check_hash(self.prev_key_mr, "prev_key_mr"))
        object.__setattr__(
            self, "prev_full_hash", check_hash(self.prev_full_hash, "prev_full_hash")
        )
        object.__setattr__(self, "entries", tuple(self.entries))
        if not all(isinstance(e, DBlockEntry) for e in self.entries):
            raise DecodeError("entries must be DBlockEntry values")

    @classmethod
    def build(
        cls,
        *,
        prev: DirectoryBlock | None,
        network_id: int,
        timestamp_min: int,
        admin_lookup_hash: bytes,
        ec_header_hash: bytes,
        fblock_key_mr: bytes,
        entry_blocks: Iterable[tuple[bytes, bytes]] = (),
    ) -> DirectoryBlock:
        """The next DBlock after ``prev`` (genesis when ``prev`` is None).

        Height, PrevKeyMR and PrevFullHash come from ``prev`` (0 / zero / zero at genesis).
        ``entry_blocks`` are ``(chain_id, eblock_key_mr)`` pairs in any order; they are
        sorted ascending by chain ID after the three special blocks (section 5.3).

        Raises:
            LedgerFormatError: duplicate or reserved chain IDs among ``entry_blocks``.
            DecodeError / LimitError: wrong hash lengths or integers out of range.
        """
        eblocks = sorted((DBlockEntry(c, k) for c, k in entry_blocks), key=lambda e: e.chain_id)
        chain_ids = [e.chain_id for e in eblocks]
        if len(set(chain_ids)) != len(chain_ids):
            raise LedgerFormatError("a directory block lists each chain at most once")
        if set(chain_ids) & {*_SPECIAL_CHAIN_IDS, DIRECTORY_CHAIN_ID}:
            raise LedgerFormatError("entry blocks cannot use a reserved block chain ID")
        special = (
            DBlockEntry(ADMIN_CHAIN_ID, admin_lookup_hash),
            DBlockEntry(EC_CHAIN_ID, ec_header_hash),
            DBlockEntry(COIN_CHAIN_ID, fblock_key_mr),
        )
        return cls(
            height=0 if prev is None else prev.height + 1,
            timestamp_min=timestamp_min,
            network_id=network_id,
            prev_key_mr=ZERO_HASH if prev is None else prev.key_mr(),
            prev_full_hash=ZERO_HASH if prev is None else prev.full_hash(),
            entries=(*special, *eblocks),
        )

    # -- binary -----------------------------------------------------------------------

    @cached_property
    def _body_root(self) -> bytes:
        return merkle_root([sha256(e.marshal()) for e in self.entries])

    def body_mr(self) -> bytes:
        """Merkle root over SHA256(chain ID || KeyMR) of each pair (32 bytes)."""
        return self._body_root

    def header(self) -> bytes:
        """The 113-byte header (also what federated servers sign, section 5.3)."""
        return self._header

    # The block is immutable: its header and KeyMR are computed once (a receipt sweep asks
    # for them once per entry of the block).
    @cached_property
    def _header(self) -> bytes:
        return b"".join(
            (
                uint_bytes(self.version, 1, "version"),
                uint_bytes(self.network_id, 4, "network_id"),
                self.body_mr(),
                self.prev_key_mr,
                self.prev_full_hash,
                uint_bytes(self.timestamp_min, 4, "timestamp_min"),
                uint_bytes(self.height, 4, "height"),
                uint_bytes(len(self.entries), 4, "block count"),
            )
        )

    def body(self) -> bytes:
        """Concatenated body pairs."""
        return b"".join(e.marshal() for e in self.entries)

    def marshal(self) -> bytes:
        """``header || body`` (the ``rawdata`` of ``dblock-by-height``)."""
        return self.header() + self.body()

    @classmethod
    def unmarshal(cls, data: bytes) -> DirectoryBlock:
        """Parse a full DBlock.

        Raises:
            DecodeError: short data, trailing bytes, or a stored BodyMR that does not match
                the body.
        """
        reader = Reader(data, "directory block")
        version, network_id = reader.uint(1), reader.uint(4)
        body_mr, prev_key_mr, prev_full_hash = reader.hash32(), reader.hash32(), reader.hash32()
        timestamp_min, height, count = reader.uint(4), reader.uint(4), reader.uint(4)
        if count * 64 != reader.remaining:
            raise DecodeError(f"directory block: {count} pairs need {count * 64} body bytes")
        entries = tuple(DBlockEntry(reader.hash32(), reader.hash32()) for _ in range(count))
        block = cls(
            height, timestamp_min, network_id, prev_key_mr, prev_full_hash, entries, version
        )
        if block.body_mr() != body_mr:
            raise DecodeError("directory block: stored BodyMR does not match the body")
        return block

    # -- hashes (KeyMR, full hash, keys: KeyedBlock) ------------------------------------

    @cached_property
    def branch_levels(self) -> list[list[bytes]]:
        """Merkle tree levels over ``branch_leaves()`` (built once per block object)."""
        return merkle_levels(self.branch_leaves())

    def branch_leaves(self) -> list[bytes]:
        """Flat leaves ``[chain_id_0, key_mr_0, chain_id_1, ...]`` used by receipts."""
        return [h for e in self.entries for h in (e.chain_id, e.key_mr)]

    @property
    def timestamp_s(self) -> int:
        """Block start in Unix seconds (``timestamp_min * 60``)."""
        return self.timestamp_min * 60

    def entry_for_chain(self, chain_id: bytes) -> DBlockEntry | None:
        """The body pair of ``chain_id``, or None."""
        return next((e for e in self.entries if e.chain_id == chain_id), None)

    # -- JSON -------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """``dblock`` object of ``dblock-by-height``: dbhash, keymr, headerhash, header
        (timestamp in minutes, as factomd), dbentries."""
        return {
            "dbhash": self.full_hash().hex(),
            "keymr": self.key_mr().hex(),
            "headerhash": self.header_hash().hex(),
            "header": {
                "version": self.version,
                "networkid": self.network_id,
                "bodymr": self.body_mr().hex(),
                "prevkeymr": self.prev_key_mr.hex(),
                "prevfullhash": self.prev_full_hash.hex(),
                "timestamp": self.timestamp_min,
                "dbheight": self.height,
                "blockcount": len(self.entries),
                "chainid": DIRECTORY_CHAIN_ID.hex(),
            },
            "dbentries": [e.to_json() for e in self.entries],
        }

    def to_directory_block_json(self) -> dict[str, Any]:
        """Result of ``directory-block`` (by KeyMR): header {prevblockkeymr, sequencenumber,
        timestamp (seconds)} and entryblocklist [{chainid, keymr}]."""
        return {
            "header": {
                "prevblockkeymr": self.prev_key_mr.hex(),
                "sequencenumber": self.height,
                "timestamp": self.timestamp_s,
            },
            "entryblocklist": [e.to_json() for e in self.entries],
        }
