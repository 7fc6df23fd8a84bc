"""The bundled proof-of-work chain, kept in its own SQLite file (WAL).

Tables (hashes raw 32 bytes, internal order)::

    blocks  height PK | hash UNIQUE | header (80 bytes) | tx_count
    txs     txid PK   | raw | seq (arrival order) | block_height (NULL in the mempool) | tx_index

``submit`` puts a transaction in the mempool (the same transaction twice is one row, so
resubmitting an anchor is harmless). ``mine_block`` takes the mempool in arrival order
after a coinbase, computes the Merkle root, searches a nonce that meets the chain's fixed
target and stores the block and its transactions in one SQLite transaction (synchronous
FULL by default: a block that was reported mined survives a crash). There is one miner; a
lock keeps reads and writes of the connection apart, so the chain can be used from the
event loop and from a mining thread at once.

``mine`` is the nonce search itself (pure, but only the miner needs it); the header,
transaction and Merkle codecs it builds on are the verifier's too, in ``ledger.core.pow``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import sqlite3
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ledger.anchor.errors import AnchorError
from ledger.core.clock import Clock
from ledger.core.pow.header import BlockHeader
from ledger.core.pow.merkle import merkle_path, merkle_root
from ledger.core.pow.params import PowParams
from ledger.core.pow.tx import PowTransaction, coinbase_transaction

__all__ = ["BlockInfo", "MiningExhausted", "PowChain", "TxLocation", "mine"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS blocks (
    height INTEGER PRIMARY KEY, hash BLOB NOT NULL UNIQUE, header BLOB NOT NULL,
    tx_count INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS txs (
    txid BLOB PRIMARY KEY, raw BLOB NOT NULL, seq INTEGER NOT NULL,
    block_height INTEGER, tx_index INTEGER) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS txs_block ON txs(block_height, tx_index);
CREATE INDEX IF NOT EXISTS txs_seq ON txs(seq);
"""

HEADER_VERSION = 1
_U32 = 1 << 32
_NONCE = struct.Struct("<I")


@dataclass(frozen=True)
class BlockInfo:
    """A stored block: ``height``, ``hash`` (internal order), parsed ``header``."""

    height: int
    hash: bytes
    header: BlockHeader


@dataclass(frozen=True)
class TxLocation:
    """A stored transaction; ``block_height``/``tx_index`` are None while in the mempool."""

    txid: bytes
    raw: bytes
    block_height: int | None
    tx_index: int | None


class PowChain:
    """The chain in ``path``; call ``open()`` once (creates the genesis block).

    Args:
        path: SQLite file.
        params: difficulty (fixed) and chain name.
        clock: block timestamps come from it.
        synchronous: SQLite ``synchronous`` pragma.
        max_block_txs: most mempool transactions per block.
        miner: the nonce search (``mine``, or ``MiningProcess.mine`` of
            ``ledger.anchor.mining`` to search in a child process).
    """

    def __init__(
        self,
        path: Path,
        *,
        params: PowParams,
        clock: Clock,
        synchronous: str = "FULL",
        max_block_txs: int = 5000,
        miner: Callable[[BlockHeader], BlockHeader] | None = None,
    ) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.params = params
        self._clock = clock
        self._max_txs = max_block_txs
        self._miner = miner or mine
        self._lock = threading.RLock()
        self._mining = threading.Lock()
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(f"PRAGMA synchronous={synchronous}")
        self._conn.executescript(SCHEMA)
        # Height of the newest block holding more than its coinbase (None: none yet or not
        # read); read once from the store, then kept by ``mine_block``.
        self._last_tx_height: int | None = None
        self._last_tx_read = False

    def open(self) -> None:
        """Mine the genesis block if the chain is empty."""
        if self.tip() is None:
            self.mine_block()

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._conn.close()

    # -- writes ---------------------------------------------------------------------------

    def submit(self, tx: PowTransaction) -> bytes:
        """Add ``tx`` to the mempool (no-op if known); returns its txid (internal order)."""
        raw, txid = tx.marshal(), tx.txid()
        with self._lock:
            seq = self._conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM txs").fetchone()[0]
            self._conn.execute(
                "INSERT OR IGNORE INTO txs(txid, raw, seq) VALUES (?, ?, ?)", (txid, raw, seq)
            )
        return txid

    def mine_block(self) -> BlockInfo:
        """Mine the next block over the mempool and store it; returns it.

        Blocking: the nonce search takes about ``2**difficulty_bits`` hashes (run it in a
        thread from async code). Only one call mines at a time.
        """
        with self._mining:
            tip = self.tip()
            height = 0 if tip is None else tip.height + 1
            pending = self._mempool()
            txs = [coinbase_transaction(height).marshal(), *pending]
            txids = [PowTransaction.unmarshal(raw).txid() for raw in txs]
            header = self._mine(tip, merkle_root(txids))
            block = BlockInfo(height, header.hash(), header)
            self._store(block, txs, txids)
            if len(txs) > 1:
                self._last_tx_height = height
            return block

    def awaits_block(self, depth: int) -> bool:
        """Whether the next block does work: a transaction waits in the mempool, or the
        newest block that holds one has fewer than ``depth`` confirmations (blocks from it
        to the tip, ``confirmations``). Empty blocks after that only spend CPU.

        Args:
            depth: confirmations an anchor needs (``AnchorSettings.confirmations``).
        """
        with self._lock:
            waiting = self._conn.execute(
                "SELECT 1 FROM txs WHERE block_height IS NULL LIMIT 1"
            ).fetchone()
            if waiting is not None:
                return True
            if not self._last_tx_read:
                row = self._conn.execute(
                    "SELECT MAX(block_height) FROM txs WHERE tx_index > 0"
                ).fetchone()
                if self._last_tx_height is None and row[0] is not None:
                    self._last_tx_height = int(row[0])
                self._last_tx_read = True
            last = self._last_tx_height
        return last is not None and self.confirmations(last) < depth

    def tip_age_s(self) -> float:
        """Seconds from the tip's timestamp to the clock's now (infinite without a tip)."""
        tip = self.tip()
        return float("inf") if tip is None else self._clock.now() - tip.header.timestamp

    def _mempool(self) -> list[bytes]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT raw FROM txs WHERE block_height IS NULL ORDER BY seq LIMIT ?",
                (self._max_txs,),
            ).fetchall()
        return [bytes(row[0]) for row in rows]

    def _mine(self, tip: BlockInfo | None, root: bytes) -> BlockHeader:
        prev = bytes(32) if tip is None else tip.hash
        timestamp = int(self._clock.now())
        if tip is not None:
            timestamp = max(timestamp, tip.header.timestamp)
        while True:
            draft = BlockHeader(HEADER_VERSION, prev, root, timestamp, self.params.bits, 0)
            try:
                return self._miner(draft)
            except MiningExhausted:
                timestamp += 1

    def _store(self, block: BlockInfo, txs: list[bytes], txids: list[bytes]) -> None:
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(
                    "INSERT INTO blocks(height, hash, header, tx_count) VALUES (?, ?, ?, ?)",
                    (block.height, block.hash, block.header.marshal(), len(txs)),
                )
                conn.execute(
                    "INSERT INTO txs(txid, raw, seq, block_height, tx_index) VALUES (?, ?, 0, ?, 0)",
                    (txids[0], txs[0], block.height),
                )
                conn.executemany(
                    "UPDATE txs SET block_height=?, tx_index=? WHERE txid=?",
                    [(block.height, i, txid) for i, txid in enumerate(txids) if i > 0],
                )
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    # -- reads ----------------------------------------------------------------------------

    def tip(self) -> BlockInfo | None:
        """The highest block, or None before the genesis block."""
        with self._lock:
            row = self._conn.execute(
                "SELECT height, hash, header FROM blocks ORDER BY height DESC LIMIT 1"
            ).fetchone()
        return None if row is None else _block(row)

    def block_at(self, height: int) -> BlockInfo | None:
        """The block at ``height``, or None."""
        with self._lock:
            row = self._conn.execute(
                "SELECT height, hash, header FROM blocks WHERE height=?", (height,)
            ).fetchone()
        return None if row is None else _block(row)

    def block_by_hash(self, block_hash: bytes) -> BlockInfo | None:
        """The block whose hash (internal order) is ``block_hash``, or None."""
        with self._lock:
            row = self._conn.execute(
                "SELECT height, hash, header FROM blocks WHERE hash=?", (block_hash,)
            ).fetchone()
        return None if row is None else _block(row)

    def headers(self, start: int, count: int) -> list[bytes]:
        """Raw headers of heights ``start .. start + count - 1`` that exist, in order."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT header FROM blocks WHERE height >= ? AND height < ? ORDER BY height",
                (start, start + count),
            ).fetchall()
        return [bytes(row[0]) for row in rows]

    def transaction(self, txid: bytes) -> TxLocation | None:
        """A transaction by txid (internal order), mined or in the mempool."""
        with self._lock:
            row = self._conn.execute(
                "SELECT raw, block_height, tx_index FROM txs WHERE txid=?", (txid,)
            ).fetchone()
        if row is None:
            return None
        return TxLocation(txid, bytes(row[0]), row[1], row[2])

    def block_txids(self, height: int) -> list[bytes]:
        """Txids of block ``height`` in block order."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT txid FROM txs WHERE block_height=? ORDER BY tx_index", (height,)
            ).fetchall()
        return [bytes(row[0]) for row in rows]

    def merkle_path(self, txid: bytes) -> tuple[int, list[bytes]] | None:
        """``(tx_index, sibling hashes)`` of a mined transaction, or None."""
        found = self.transaction(txid)
        if found is None or found.block_height is None or found.tx_index is None:
            return None
        txids = self.block_txids(found.block_height)
        return found.tx_index, merkle_path(txids, found.tx_index)

    def confirmations(self, block_height: int) -> int:
        """Blocks from ``block_height`` to the tip, both included (0 if above the tip)."""
        tip = self.tip()
        return 0 if tip is None or block_height > tip.height else tip.height - block_height + 1


def _block(row: tuple[int, bytes, bytes]) -> BlockInfo:
    return BlockInfo(int(row[0]), bytes(row[1]), BlockHeader.unmarshal(bytes(row[2])))


class MiningExhausted(AnchorError, RuntimeError):
    """Every nonce was tried without meeting the target (change the timestamp and retry)."""


def mine(header: BlockHeader) -> BlockHeader:
    """``header`` with the first nonce (counting from its own) whose hash meets the target.

    Raises:
        MiningExhausted: no nonce up to 2**32-1 works.
        LimitError: the header's bits are invalid.
    """
    target = header.target()
    prefix = header.marshal()[:76]
    # The first 64 bytes are the same for every nonce: hash them once and copy the state
    # (the standard "midstate"); the digest is still SHA256d of the whole 80 bytes.
    midstate = hashlib.sha256(prefix[:64])
    tail = prefix[64:]
    pack, sha256 = _NONCE.pack, hashlib.sha256
    for nonce in range(header.nonce, _U32):
        first = midstate.copy()
        first.update(tail + pack(nonce))
        digest = sha256(first.digest()).digest()
        if int.from_bytes(digest, "little") <= target:
            return dataclasses.replace(header, nonce=nonce)
    raise MiningExhausted("no nonce meets the target")
