"""Coin (factoid) block (FBlock): layout, BodyMR, LedgerMR, KeyMR, LedgerKeyMR
(docs/formats.md §5.7).

Header (factomd ``common/factoid/fblock.go`` ``MarshalHeader``)::

    32      chain ID 00..0f
    32      BodyMR
    32      PrevKeyMR
    32      PrevLedgerKeyMR
    8       ExchRate (minor units per EC)
    4       DBHeight
    varInt  HeaderExpansionSize (always 0)
    4       TxCount
    4       BodySize

Body: transactions in order with a single ``0x00`` byte minute marker at each minute
boundary, exactly 10 markers, the last at the end. Transaction 0 is the coinbase.

BodyMR leaves: SHA256(full tx) per tx and SHA256(0x00) per marker, in body order; LedgerMR
leaves: TxID per tx and SHA256(0x00) per marker. KeyMR = SHA256(SHA256(header) || BodyMR);
LedgerKeyMR = SHA256(LedgerMR || SHA256(header)) (reversed order).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ledger.core.blocks._codec import Reader, check_hash, check_uint, uint_bytes
from ledger.core.errors import DecodeError, LedgerFormatError
from ledger.core.hashing import ZERO_HASH, sha256
from ledger.core.merkle import merkle_root
from ledger.core.transaction import Transaction

__all__ = ["COIN_CHAIN_ID", "MINUTES_PER_BLOCK", "FactoidBlock"]

COIN_CHAIN_ID = bytes(31) + b"\x0f"
MINUTES_PER_BLOCK = 10
_MARKER = 0x00
_MARKER_LEAF = sha256(bytes([_MARKER]))


@dataclass(frozen=True)
class FactoidBlock:
    """A coin block; BodyMR, TxCount and BodySize derive from the transactions.

    Attributes:
        height: DBHeight.
        exchange_rate: minor units per entry credit (ExchRate).
        prev_key_mr / prev_ledger_key_mr: of FBlock ``height - 1`` (zero at genesis).
        transactions: coinbase first, then the others in acknowledgement order.
        minute_ends: 10 non-decreasing counts; ``minute_ends[k]`` transactions come before
            marker ``k`` (factomd ``endOfPeriod``). The last equals ``len(transactions)``
            and, when there are transactions, the first is at least 1 (the coinbase
            precedes every marker).

    Raises (construction): LedgerFormatError when ``minute_ends`` breaks these rules;
    DecodeError / LimitError for bad hashes or integers.
    """

    height: int
    exchange_rate: int
    prev_key_mr: bytes
    prev_ledger_key_mr: bytes
    transactions: tuple[Transaction, ...]
    minute_ends: tuple[int, ...]

    def __post_init__(self) -> None:
        check_uint(self.height, 32, "height")
        check_uint(self.exchange_rate, 64, "exchange_rate")
        for name in ("prev_key_mr", "prev_ledger_key_mr"):
            object.__setattr__(self, name, check_hash(getattr(self, name), name))
        object.__setattr__(self, "transactions", tuple(self.transactions))
        object.__setattr__(self, "minute_ends", tuple(self.minute_ends))
        if not all(isinstance(t, Transaction) for t in self.transactions):
            raise DecodeError("transactions must be Transaction values")
        _check_minute_ends(self.minute_ends, len(self.transactions))

    @classmethod
    def build(
        cls,
        *,
        prev: FactoidBlock | None,
        exchange_rate: int,
        minutes: Sequence[Sequence[Transaction]],
    ) -> FactoidBlock:
        """The next FBlock after ``prev`` (genesis when None) from 10 per-minute groups.

        ``minutes[k]`` holds the transactions acknowledged in minute k; the coinbase must
        be ``minutes[0][0]``. Raises LedgerFormatError unless there are exactly 10 groups
        and minute 0 is non-empty.
        """
        if len(minutes) != MINUTES_PER_BLOCK or not minutes[0]:
            raise LedgerFormatError("need 10 minute groups, the first starting with the coinbase")
        transactions = tuple(t for group in minutes for t in group)
        ends, total = [], 0
        for group in minutes:
            total += len(group)
            ends.append(total)
        return cls(
            height=0 if prev is None else prev.height + 1,
            exchange_rate=exchange_rate,
            prev_key_mr=ZERO_HASH if prev is None else prev.key_mr(),
            prev_ledger_key_mr=ZERO_HASH if prev is None else prev.ledger_key_mr(),
            transactions=transactions,
            minute_ends=tuple(ends),
        )

    # -- body ------------------------------------------------------------------------

    def _body_items(self) -> list[Transaction | None]:
        """Transactions and markers (None) in body order."""
        items: list[Transaction | None] = []
        marker = 0
        for position, tx in enumerate(self.transactions):
            while marker < MINUTES_PER_BLOCK and self.minute_ends[marker] == position:
                items.append(None)
                marker += 1
            items.append(tx)
        return items + [None] * (MINUTES_PER_BLOCK - marker)

    def body(self) -> bytes:
        """Transactions with the 10 ``0x00`` minute markers."""
        return b"".join(bytes([_MARKER]) if t is None else t.marshal() for t in self._body_items())

    def body_mr(self) -> bytes:
        """Merkle root over SHA256(full tx) / SHA256(0x00) in body order."""
        return merkle_root(
            [_MARKER_LEAF if t is None else t.full_hash() for t in self._body_items()]
        )

    def ledger_mr(self) -> bytes:
        """Merkle root over TxID / SHA256(0x00) in body order (signatures excluded)."""
        return merkle_root([_MARKER_LEAF if t is None else t.txid() for t in self._body_items()])

    # -- binary ----------------------------------------------------------------------

    def header(self) -> bytes:
        """Header bytes (chain ID through BodySize)."""
        return b"".join(
            (
                COIN_CHAIN_ID,
                self.body_mr(),
                self.prev_key_mr,
                self.prev_ledger_key_mr,
                uint_bytes(self.exchange_rate, 8, "exchange_rate"),
                uint_bytes(self.height, 4, "height"),
                b"\x00",  # header expansion size
                uint_bytes(len(self.transactions), 4, "tx count"),
                uint_bytes(len(self.body()), 4, "body size"),
            )
        )

    def marshal(self) -> bytes:
        """``header || body`` (the ``rawdata`` of ``fblock-by-height``)."""
        return self.header() + self.body()

    @classmethod
    def unmarshal(cls, data: bytes) -> FactoidBlock:
        """Parse a full FBlock.

        Raises:
            DecodeError: wrong chain ID, non-empty header expansion, malformed transaction,
                marker count other than 10, TxCount/BodySize/BodyMR that do not match, or
                trailing bytes. LimitError: out-of-range transaction fields.
        """
        reader = Reader(data, "coin block")
        if reader.hash32() != COIN_CHAIN_ID:
            raise DecodeError("coin block does not start with the coin chain ID")
        body_mr, prev_key_mr, prev_ledger = reader.hash32(), reader.hash32(), reader.hash32()
        rate, height = reader.uint(8), reader.uint(4)
        if reader.varint() != 0:
            raise DecodeError("coin block header expansion must be empty")
        tx_count, body_size = reader.uint(4), reader.uint(4)
        if body_size != reader.remaining:
            raise DecodeError(f"coin block: body size {body_size}, {reader.remaining} bytes left")
        transactions, ends = _read_body(reader)
        if len(transactions) != tx_count:
            raise DecodeError(f"coin block: TxCount {tx_count}, body has {len(transactions)}")
        try:
            block = cls(height, rate, prev_key_mr, prev_ledger, tuple(transactions), tuple(ends))
        except LedgerFormatError as exc:
            if isinstance(exc, DecodeError):
                raise
            raise DecodeError(f"coin block: {exc}") from exc
        if block.body_mr() != body_mr:
            raise DecodeError("coin block: stored BodyMR does not match the body")
        return block

    # -- hashes ----------------------------------------------------------------------

    def header_hash(self) -> bytes:
        """SHA256(header)."""
        return sha256(self.header())

    def key_mr(self) -> bytes:
        """KeyMR = SHA256(SHA256(header) || BodyMR): the DBlock entry and primary key."""
        return sha256(self.header_hash() + self.body_mr())

    def ledger_key_mr(self) -> bytes:
        """LedgerKeyMR = SHA256(LedgerMR || SHA256(header)): the next PrevLedgerKeyMR."""
        return sha256(self.ledger_mr() + self.header_hash())

    def full_hash(self) -> bytes:
        """SHA256(header || body) (not used as a key by factomd; provided for storage)."""
        return sha256(self.marshal())

    def primary_key(self) -> bytes:
        """The key listed in the DBlock and used for lookups: the KeyMR (section 9.3)."""
        return self.key_mr()

    def secondary_key(self) -> bytes:
        """The block's second lookup key: the LedgerKeyMR (section 9.3)."""
        return self.ledger_key_mr()

    def to_json(self) -> dict[str, Any]:
        """``fblock`` object: bodymr, prevkeymr, prevledgerkeymr, exchrate, dbheight,
        transactions (section 4.5 shape with blockheight), chainid, keymr, ledgerkeymr."""
        return {
            "bodymr": self.body_mr().hex(),
            "prevkeymr": self.prev_key_mr.hex(),
            "prevledgerkeymr": self.prev_ledger_key_mr.hex(),
            "exchrate": self.exchange_rate,
            "dbheight": self.height,
            "transactions": [t.to_json(block_height=self.height) for t in self.transactions],
            "chainid": COIN_CHAIN_ID.hex(),
            "keymr": self.key_mr().hex(),
            "ledgerkeymr": self.ledger_key_mr().hex(),
        }


def _check_minute_ends(ends: tuple[int, ...], count: int) -> None:
    if len(ends) != MINUTES_PER_BLOCK:
        raise LedgerFormatError("minute_ends must have exactly 10 values")
    if any(isinstance(e, bool) or not isinstance(e, int) for e in ends):
        raise LedgerFormatError("minute_ends must be integers")
    if list(ends) != sorted(ends) or ends[0] < 0 or ends[-1] != count:
        raise LedgerFormatError("minute_ends must be non-decreasing and end at the tx count")
    if count and ends[0] < 1:
        raise LedgerFormatError("the coinbase transaction must precede the first marker")


def _read_body(reader: Reader) -> tuple[list[Transaction], list[int]]:
    transactions: list[Transaction] = []
    ends: list[int] = []
    while reader.remaining:
        if reader.peek() == _MARKER:
            reader.take(1)
            ends.append(len(transactions))
            if len(ends) > MINUTES_PER_BLOCK:
                raise DecodeError("coin block has more than 10 minute markers")
        else:
            transactions.append(Transaction.read(reader))
    if len(ends) != MINUTES_PER_BLOCK:
        raise DecodeError(f"coin block has {len(ends)} minute markers, expected 10")
    return transactions, ends
