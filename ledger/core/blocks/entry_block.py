"""Entry block (EBlock): layout, minute markers, hashes, node JSON (docs/formats.md §5.2, §5.4).

Header, 140 bytes (factomd ``common/entryBlock/eblockHeader.go``)::

    32  chain ID
    32  BodyMR
    32  PrevKeyMR      (zero for a chain's first block)
    32  PrevFullHash   (zero for a chain's first block)
    4   EBSequence     (0 for a chain's first block)
    4   DBHeight
    4   EntryCount     (items, minute markers included)

Body: EntryCount 32-byte items, entry hashes interleaved with minute markers
``00..00 0m`` (m = 1..10: the entries before it were acknowledged in minute m-1). A marker
follows every minute that had entries, so a well-formed block ends with a marker.

BodyMR = Merkle root over all items; KeyMR = SHA256(SHA256(header) || BodyMR); full hash =
SHA256(header || body). API timestamp of an entry = DBlock timestamp (s) + 60 x the value
of the first marker after it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ledger.core.blocks._codec import Reader, check_hash, check_uint, uint_bytes
from ledger.core.blocks._keyed import KeyedBlock
from ledger.core.errors import DecodeError, LedgerFormatError, NotInBlockError
from ledger.core.hashing import ZERO_HASH
from ledger.core.merkle import merkle_levels

__all__ = [
    "ENTRY_BLOCK_HEADER_BYTES",
    "MINUTES_PER_BLOCK",
    "EntryBlock",
    "is_minute_marker",
    "minute_marker",
]

ENTRY_BLOCK_HEADER_BYTES = 140
MINUTES_PER_BLOCK = 10
_MARKER_PREFIX = bytes(31)


def minute_marker(minute_end: int) -> bytes:
    """The 32-byte marker ``00..00 0m`` closing minute ``minute_end - 1`` (1 <= m <= 10)."""
    if isinstance(minute_end, bool) or not 1 <= minute_end <= MINUTES_PER_BLOCK:
        raise LedgerFormatError(f"minute marker value must be 1..10, got {minute_end!r}")
    return _MARKER_PREFIX + bytes([minute_end])


def is_minute_marker(item: bytes) -> bool:
    """True for the ten 32-byte minute markers."""
    return len(item) == 32 and item[:31] == _MARKER_PREFIX and 1 <= item[31] <= MINUTES_PER_BLOCK


@dataclass(frozen=True)
class EntryBlock(KeyedBlock):
    """An entry block of one chain; BodyMR and EntryCount derive from ``items``.

    Attributes:
        chain_id: raw 32 bytes.
        sequence: EBSequence (0 for the chain's first block).
        height: DBHeight of the directory block that lists this block.
        prev_key_mr / prev_full_hash: of the chain's previous EBlock (zero when first).
        items: 32-byte entry hashes and minute markers in body order.
    """

    chain_id: bytes
    sequence: int
    height: int
    prev_key_mr: bytes
    prev_full_hash: bytes
    items: tuple[bytes, ...]

    def __post_init__(self) -> None:
        check_uint(self.sequence, 32, "sequence")
        check_uint(self.height, 32, "height")
        for name in ("chain_id", "prev_key_mr", "prev_full_hash"):
            object.__setattr__(self, name, check_hash(getattr(self, name), name))
        object.__setattr__(self, "items", tuple(check_hash(i, "item") for i in self.items))

    @classmethod
    def build(
        cls,
        *,
        chain_id: bytes,
        height: int,
        entries: Iterable[tuple[bytes, int]],
        prev: EntryBlock | None = None,
    ) -> EntryBlock:
        """A chain's next EBlock after ``prev`` (first block when ``prev`` is None).

        ``entries`` are ``(entry_hash, minute)`` with minute 0..9 (the minute of the block in
        which the entry was acknowledged), in acknowledgement order with non-decreasing
        minutes; a marker ``minute + 1`` is placed after each minute's last entry.

        Raises:
            LedgerFormatError: minutes out of range or decreasing, no entries, or ``prev``
                of another chain.
        """
        if prev is not None and prev.chain_id != chain_id:
            raise LedgerFormatError("prev belongs to another chain")
        items = _items_with_markers(entries)
        return cls(
            chain_id=chain_id,
            sequence=0 if prev is None else prev.sequence + 1,
            height=height,
            prev_key_mr=ZERO_HASH if prev is None else prev.key_mr(),
            prev_full_hash=ZERO_HASH if prev is None else prev.full_hash(),
            items=items,
        )

    # -- binary -----------------------------------------------------------------------

    @cached_property
    def merkle_levels(self) -> list[list[bytes]]:
        """The body's Merkle tree levels (items first), built once per block object."""
        return merkle_levels(self.items) if self.items else [[ZERO_HASH]]

    def body_mr(self) -> bytes:
        """Merkle root over all items, markers included (32 bytes)."""
        return self.merkle_levels[-1][0]

    def header(self) -> bytes:
        """The 140-byte header."""
        return self._header

    # The block is immutable: its header and KeyMR are computed once (a receipt sweep asks
    # for them once per entry of the block).
    @cached_property
    def _header(self) -> bytes:
        return b"".join(
            (
                self.chain_id,
                self.body_mr(),
                self.prev_key_mr,
                self.prev_full_hash,
                uint_bytes(self.sequence, 4, "sequence"),
                uint_bytes(self.height, 4, "height"),
                uint_bytes(len(self.items), 4, "entry count"),
            )
        )

    def marshal(self) -> bytes:
        """``header || items``."""
        return self.header() + b"".join(self.items)

    @classmethod
    def unmarshal(cls, data: bytes) -> EntryBlock:
        """Parse a full EBlock; DecodeError on short/trailing data or a wrong stored BodyMR."""
        reader = Reader(data, "entry block")
        chain_id, body_mr = reader.hash32(), reader.hash32()
        prev_key_mr, prev_full_hash = reader.hash32(), reader.hash32()
        sequence, height, count = reader.uint(4), reader.uint(4), reader.uint(4)
        if count * 32 != reader.remaining:
            raise DecodeError(f"entry block: {count} items need {count * 32} body bytes")
        items = tuple(reader.hash32() for _ in range(count))
        block = cls(chain_id, sequence, height, prev_key_mr, prev_full_hash, items)
        if block.body_mr() != body_mr:
            raise DecodeError("entry block: stored BodyMR does not match the body")
        return block

    # -- entries and times ------------------------------------------------------------

    def entry_hashes(self) -> list[bytes]:
        """Entry hashes in body order, markers removed (duplicates kept)."""
        return [i for i in self.items if not is_minute_marker(i)]

    def entry_minute_ends(self) -> list[tuple[bytes, int]]:
        """``(entry_hash, m)`` per entry, m = the first marker value after it (0 if none)."""
        result: list[tuple[bytes, int]] = []
        pending: list[bytes] = []
        for item in self.items:
            if is_minute_marker(item):
                result += [(h, item[31]) for h in pending]
                pending = []
            else:
                pending.append(item)
        return result + [(h, 0) for h in pending]

    def entry_timestamp_s(self, entry_hash: bytes, directory_block_timestamp_s: int) -> int:
        """API timestamp (Unix s) of the first occurrence of ``entry_hash``.

        Raises:
            NotInBlockError: the entry is not in this block (a ``LookupError`` too).
        """
        found = self._first_occurrences.get(bytes(entry_hash))
        if found is None:
            raise NotInBlockError(
                f"entry {bytes(entry_hash).hex()} is not in this entry block",
                item=bytes(entry_hash),
                block_key_mr=self.key_mr(),
            )
        return directory_block_timestamp_s + 60 * found[1]

    def entry_position(self, entry_hash: bytes) -> int | None:
        """Index in ``items`` of the first occurrence of ``entry_hash``, or ``None``."""
        found = self._first_occurrences.get(bytes(entry_hash))
        return None if found is None else found[0]

    @cached_property
    def _first_occurrences(self) -> dict[bytes, tuple[int, int]]:
        """Entry hash -> (index in ``items``, minute end) of its first occurrence.

        Built once per block: a receipt sweep asks about every entry of the same block, and
        scanning ``items`` each time made that quadratic.
        """
        first: dict[bytes, tuple[int, int]] = {}
        pending: list[tuple[bytes, int]] = []
        for index, item in enumerate(self.items):
            if is_minute_marker(item):
                for entry_hash, at in pending:
                    first.setdefault(entry_hash, (at, item[31]))
                pending = []
            else:
                pending.append((item, index))
        for entry_hash, at in pending:
            first.setdefault(entry_hash, (at, 0))
        return first

    # -- JSON -------------------------------------------------------------------------

    def to_json(self, *, directory_block_timestamp_s: int) -> dict[str, Any]:
        """Result of ``entry-block``: header {blocksequencenumber, chainid, prevkeymr,
        timestamp (s, the DBlock's), dbheight} and entrylist [{entryhash, timestamp}] with
        markers removed and timestamp = DBlock seconds + 60 x following marker."""
        return {
            "header": {
                "blocksequencenumber": self.sequence,
                "chainid": self.chain_id.hex(),
                "prevkeymr": self.prev_key_mr.hex(),
                "timestamp": directory_block_timestamp_s,
                "dbheight": self.height,
            },
            "entrylist": [
                {"entryhash": h.hex(), "timestamp": directory_block_timestamp_s + 60 * m}
                for h, m in self.entry_minute_ends()
            ],
        }


def _items_with_markers(entries: Iterable[tuple[bytes, int]]) -> tuple[bytes, ...]:
    items: list[bytes] = []
    current: int | None = None
    for entry_hash, minute in entries:
        if isinstance(minute, bool) or not isinstance(minute, int) or not 0 <= minute < 10:
            raise LedgerFormatError(f"minute must be 0..9, got {minute!r}")
        if current is not None and minute < current:
            raise LedgerFormatError("entries must come in non-decreasing minute order")
        if current is not None and minute != current:
            items.append(minute_marker(current + 1))
        current = minute
        items.append(check_hash(entry_hash, "entry_hash"))
    if current is None:
        raise LedgerFormatError("an entry block needs at least one entry")
    return (*items, minute_marker(current + 1))
