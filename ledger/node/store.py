"""The node's embedded store: one SQLite file in WAL mode.

Writes go through a single writer thread that groups concurrent writes into one
transaction (group commit): each caller awaits its own write, and the reply to a
client is sent only after the transaction holding it has been committed to disk.
Reads use a separate connection owned by the event loop thread; point lookups by
primary key are microseconds, so they run inline.

Tables (all hashes are raw 32-byte BLOBs):

- ``meta``: key/value facts (genesis time, node identity seed, ...).
- ``dblocks``, ``ablocks``, ``ecblocks``, ``fblocks``: one row per height with both
  lookup keys (factom-formats 9.3 "Block lookup keys") and the exact block bytes.
- ``eblocks``: entry blocks by KeyMR, with full hash, chain, sequence and height.
- ``entries``: entries recorded in blocks, with their entry block and height.
- ``chains``: head entry block of each chain.
- ``balances``: ``ec`` (by public key, in entry credits) and ``fct`` (by RCD hash, in minor units)
  as of the last saved block.
- ``commits``: every accepted commit (txid), its block height once recorded, and whether
  a reveal consumed it. ``pending_reveals`` and ``pending_txs`` journal accepted reveals and
  coin transactions until a block records them.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS dblocks (
    height INTEGER PRIMARY KEY, keymr BLOB NOT NULL UNIQUE, full_hash BLOB NOT NULL,
    timestamp_min INTEGER NOT NULL, raw BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS dblocks_full ON dblocks(full_hash);
CREATE TABLE IF NOT EXISTS ablocks (
    height INTEGER PRIMARY KEY, lookup_hash BLOB NOT NULL UNIQUE, back_ref BLOB NOT NULL,
    raw BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS ablocks_backref ON ablocks(back_ref);
CREATE TABLE IF NOT EXISTS ecblocks (
    height INTEGER PRIMARY KEY, header_hash BLOB NOT NULL UNIQUE, full_hash BLOB NOT NULL,
    raw BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS ecblocks_full ON ecblocks(full_hash);
CREATE TABLE IF NOT EXISTS fblocks (
    height INTEGER PRIMARY KEY, keymr BLOB NOT NULL UNIQUE, ledger_keymr BLOB NOT NULL,
    raw BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS fblocks_ledger ON fblocks(ledger_keymr);
CREATE TABLE IF NOT EXISTS eblocks (
    keymr BLOB PRIMARY KEY, full_hash BLOB NOT NULL, chain_id BLOB NOT NULL,
    sequence INTEGER NOT NULL, height INTEGER NOT NULL, raw BLOB NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS eblocks_full ON eblocks(full_hash);
CREATE INDEX IF NOT EXISTS eblocks_height ON eblocks(height);
CREATE TABLE IF NOT EXISTS entries (
    entry_hash BLOB PRIMARY KEY, chain_id BLOB NOT NULL, height INTEGER NOT NULL,
    eblock_keymr BLOB NOT NULL, raw BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS chains (
    chain_id BLOB PRIMARY KEY, head_keymr BLOB NOT NULL, head_full_hash BLOB NOT NULL,
    sequence INTEGER NOT NULL, created_height INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS balances (
    kind TEXT NOT NULL, key BLOB NOT NULL, amount INTEGER NOT NULL,
    PRIMARY KEY (kind, key)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS commits (
    txid BLOB PRIMARY KEY, entry_hash BLOB NOT NULL, raw BLOB NOT NULL,
    received_ms INTEGER NOT NULL, block_height INTEGER, revealed INTEGER NOT NULL DEFAULT 0,
    seq INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS commits_entry ON commits(entry_hash);
CREATE INDEX IF NOT EXISTS commits_open ON commits(revealed, block_height);
CREATE TABLE IF NOT EXISTS pending_reveals (
    entry_hash BLOB PRIMARY KEY, raw BLOB NOT NULL, received_ms INTEGER NOT NULL,
    seq INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pending_txs (
    txid BLOB PRIMARY KEY, raw BLOB NOT NULL, received_ms INTEGER NOT NULL,
    seq INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS txs (
    txid BLOB PRIMARY KEY, full_hash BLOB NOT NULL, height INTEGER NOT NULL,
    fblock_keymr BLOB NOT NULL, raw BLOB NOT NULL) WITHOUT ROWID;
"""


class StoreError(RuntimeError):
    """The store could not complete a write (disk full, I/O error); nothing of it was applied."""


def connect(path: Path, *, synchronous: str = "FULL") -> sqlite3.Connection:
    """Open ``path`` in WAL mode with the given ``synchronous`` level and the schema applied."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    conn.execute("PRAGMA busy_timeout=10000")
    conn.executescript(SCHEMA)
    return conn


class _Job:
    __slots__ = ("fn", "loop", "future", "result", "error")

    def __init__(self, fn: Callable[[sqlite3.Connection], Any], loop: Any, future: Any) -> None:
        self.fn = fn
        self.loop = loop
        self.future = future
        self.result: Any = None
        self.error: BaseException | None = None


class Store:
    """SQLite store with a group-commit writer thread and an inline read connection.

    Args:
        path: database file.
        synchronous: SQLite ``synchronous`` pragma (``FULL`` or ``NORMAL``).
        max_batch: the most write jobs grouped in one transaction.
    """

    def __init__(self, path: Path, *, synchronous: str = "FULL", max_batch: int = 2000) -> None:
        self.path = path
        self._synchronous = synchronous
        self._max_batch = max_batch
        self._write_conn = connect(path, synchronous=synchronous)
        self.read = connect(path, synchronous=synchronous)
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="node-store-writer", daemon=True)
        self._thread.start()

    # -- writes ---------------------------------------------------------------------------

    async def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` inside a write transaction; return once it is committed to disk.

        Raises:
            StoreError: the transaction failed (its whole batch was rolled back).
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue.put(_Job(fn, loop, future))
        return await future

    def write_sync(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Blocking variant of :meth:`write` for start-up code outside an event loop."""
        conn = self._write_conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = fn(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return result

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            batch = [job]
            while len(batch) < self._max_batch:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    self._commit_batch(batch)
                    return
                batch.append(nxt)
            self._commit_batch(batch)

    def _commit_batch(self, batch: list[_Job]) -> None:
        conn = self._write_conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            for job in batch:
                conn.execute("SAVEPOINT job")
                try:
                    job.result = job.fn(conn)
                    conn.execute("RELEASE job")
                except Exception as exc:  # one job's own failure must not sink the batch
                    conn.execute("ROLLBACK TO job")
                    conn.execute("RELEASE job")
                    job.error = exc
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            log.error("store write failed: %s", exc)
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            for job in batch:
                job.error = StoreError(f"store write failed: {exc}")
        for job in batch:
            job.loop.call_soon_threadsafe(_settle, job)

    def close(self) -> None:
        """Finish queued writes, then close both connections."""
        self._queue.put(None)
        self._thread.join(timeout=30)
        self._write_conn.close()
        self.read.close()

    # -- meta -----------------------------------------------------------------------------

    def get_meta(self, key: str) -> bytes | None:
        row = self.read.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else bytes(row[0])


def _settle(job: _Job) -> None:
    if job.future.done():
        return
    if job.error is not None:
        job.future.set_exception(job.error)
    else:
        job.future.set_result(job.result)


def put_meta(conn: sqlite3.Connection, key: str, value: bytes) -> None:
    """Insert or replace one ``meta`` fact (inside a write job)."""
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))
