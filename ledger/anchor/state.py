"""The anchoring service's own record: what it anchored and which records it wrote.

One SQLite file (WAL). Tables (hashes raw 32 bytes; txids internal order)::

    dblocks  height PK | keymr | anchor_txid | record_entry (entry hash, NULL until written)
             | holds_documents (1: an entry block of a chain other than the ledger's own and
               the anchor records'; 0: nothing a document's proof can lead to)
    windows  txid PK | height_min | height_max | window_mr | record_entry

Every submission to the backend is idempotent (the same anchor gives the same txid), so a
crash between submitting and saving here only means the next round submits again.
Used from the service's event loop thread only. A file written before
``holds_documents`` existed gains the column (1 for its rows) when opened.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["AnchorState", "AnchoredBlock", "AnchoredWindow", "open_store"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS dblocks (
    height INTEGER PRIMARY KEY, keymr BLOB NOT NULL, anchor_txid BLOB NOT NULL,
    record_entry BLOB, holds_documents INTEGER NOT NULL DEFAULT 1);
CREATE INDEX IF NOT EXISTS dblocks_open ON dblocks(record_entry, height);
CREATE TABLE IF NOT EXISTS windows (
    txid BLOB PRIMARY KEY, height_min INTEGER NOT NULL, height_max INTEGER NOT NULL,
    window_mr BLOB NOT NULL, record_entry BLOB) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS windows_max ON windows(height_max);
"""


@dataclass(frozen=True)
class AnchoredBlock:
    """A directory block submitted for anchoring."""

    height: int
    keymr: bytes
    anchor_txid: bytes
    record_entry: bytes | None = None
    #: Whether a document's proof can lead to this block (its entry blocks are not all the
    #: ledger's own chains and the anchor records'): only such blocks are timestamped.
    holds_documents: bool = True


@dataclass(frozen=True)
class AnchoredWindow:
    """A window commitment submitted for anchoring."""

    txid: bytes
    height_min: int
    height_max: int
    window_mr: bytes
    record_entry: bytes | None = None


def open_store(path: Path, schema: str, *, synchronous: str = "FULL") -> sqlite3.Connection:
    """The anchoring service's SQLite file ``path`` (created with its folder when missing),
    in WAL mode at ``synchronous`` (FULL: what is acknowledged survives power loss), with
    ``schema`` (idempotent DDL) applied; autocommit, shared by the service's threads."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    conn.executescript(schema)
    return conn


class AnchorState:
    """The service's store in ``path`` (see the module docstring)."""

    def __init__(self, path: Path, *, synchronous: str = "FULL") -> None:
        self._conn = open_store(path, SCHEMA, synchronous=synchronous)
        columns = {row[1] for row in self._conn.execute("PRAGMA table_info(dblocks)")}
        if "holds_documents" not in columns:
            self._conn.execute(
                "ALTER TABLE dblocks ADD COLUMN holds_documents INTEGER NOT NULL DEFAULT 1"
            )

    def close(self) -> None:
        self._conn.close()

    def last_height(self) -> int:
        """Highest directory block height submitted, -1 when none."""
        row = self._conn.execute("SELECT MAX(height) FROM dblocks").fetchone()
        return -1 if row[0] is None else int(row[0])

    def add(self, blocks: Sequence[AnchoredBlock], window: AnchoredWindow | None) -> None:
        """Save newly submitted blocks and their window in one transaction."""
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(
                "INSERT OR IGNORE INTO dblocks(height, keymr, anchor_txid, holds_documents)"
                " VALUES (?, ?, ?, ?)",
                [(b.height, b.keymr, b.anchor_txid, int(b.holds_documents)) for b in blocks],
            )
            if window is not None:
                conn.execute(
                    "INSERT OR IGNORE INTO windows(txid, height_min, height_max, window_mr)"
                    " VALUES (?, ?, ?, ?)",
                    (window.txid, window.height_min, window.height_max, window.window_mr),
                )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def keymrs(self, low: int, high: int) -> list[bytes]:
        """KeyMRs of heights ``low..high`` (inclusive) in height order."""
        rows = self._conn.execute(
            "SELECT keymr FROM dblocks WHERE height BETWEEN ? AND ? ORDER BY height", (low, high)
        ).fetchall()
        return [bytes(row[0]) for row in rows]

    def block(self, height: int) -> AnchoredBlock | None:
        row = self._conn.execute(
            "SELECT height, keymr, anchor_txid, record_entry, holds_documents FROM dblocks"
            " WHERE height=?",
            (height,),
        ).fetchone()
        return None if row is None else _block(row)

    def blocks_with_documents(self, *, after: int, limit: int) -> list[AnchoredBlock]:
        """The blocks above height ``after`` that a document's proof can lead to
        (``holds_documents``), lowest first, at most ``limit``: the ones to timestamp."""
        rows = self._conn.execute(
            "SELECT height, keymr, anchor_txid, record_entry, holds_documents FROM dblocks"
            " WHERE height > ? AND holds_documents = 1 ORDER BY height LIMIT ?",
            (after, limit),
        ).fetchall()
        return [_block(row) for row in rows]

    def unrecorded_blocks(self, limit: int) -> list[AnchoredBlock]:
        """Blocks whose anchor record is not written yet, lowest first."""
        rows = self._conn.execute(
            "SELECT height, keymr, anchor_txid, record_entry, holds_documents FROM dblocks"
            " WHERE record_entry IS NULL ORDER BY height LIMIT ?",
            (limit,),
        ).fetchall()
        return [_block(row) for row in rows]

    def unrecorded_windows(self, limit: int) -> list[AnchoredWindow]:
        """Windows whose record is not written yet, lowest first."""
        rows = self._conn.execute(
            "SELECT txid, height_min, height_max, window_mr, record_entry FROM windows"
            " WHERE record_entry IS NULL ORDER BY height_max LIMIT ?",
            (limit,),
        ).fetchall()
        return [_window(row) for row in rows]

    def window_for(self, height: int) -> AnchoredWindow | None:
        """The first window (lowest top) that covers ``height``."""
        row = self._conn.execute(
            "SELECT txid, height_min, height_max, window_mr, record_entry FROM windows"
            " WHERE height_max >= ? AND height_min <= ? ORDER BY height_max LIMIT 1",
            (height, height),
        ).fetchone()
        return None if row is None else _window(row)

    def replace_anchor(self, height: int, txid: bytes) -> None:
        """Point the unrecorded anchor of ``height`` at a new transaction (its former one
        was lost: a reorganization, a conflict, a pool that dropped it)."""
        self._conn.execute(
            "UPDATE dblocks SET anchor_txid=? WHERE height=? AND record_entry IS NULL",
            (txid, height),
        )

    def replace_window(self, old_txid: bytes, new_txid: bytes) -> None:
        """Point an unrecorded window at a new transaction (as ``replace_anchor``)."""
        self._conn.execute(
            "UPDATE windows SET txid=? WHERE txid=? AND record_entry IS NULL",
            (new_txid, old_txid),
        )

    def mark_block_recorded(self, height: int, entry_hash: bytes) -> None:
        self._conn.execute("UPDATE dblocks SET record_entry=? WHERE height=?", (entry_hash, height))

    def mark_window_recorded(self, txid: bytes, entry_hash: bytes) -> None:
        self._conn.execute("UPDATE windows SET record_entry=? WHERE txid=?", (entry_hash, txid))


def _block(row: tuple[int, bytes, bytes, bytes | None, int]) -> AnchoredBlock:
    entry = None if row[3] is None else bytes(row[3])
    return AnchoredBlock(int(row[0]), bytes(row[1]), bytes(row[2]), entry, bool(row[4]))


def _window(row: tuple[bytes, int, int, bytes, bytes | None]) -> AnchoredWindow:
    entry = None if row[4] is None else bytes(row[4])
    return AnchoredWindow(bytes(row[0]), int(row[1]), int(row[2]), bytes(row[3]), entry)
