"""The node's embedded store: one SQLite file in WAL mode.

Writes go through a single writer thread that groups concurrent writes into one
transaction (group commit): each caller awaits its own write, and the reply to a
client is sent only after the transaction holding it has been committed to disk.
Reads use a separate connection owned by the event loop thread; point lookups by
primary key are microseconds, so they run inline.

Tables (all hashes are raw 32-byte BLOBs):

- ``meta``: key/value facts (genesis time, node identity seed, ...).
- ``journal``: every accepted commit, reveal and coin transaction, append-only, keyed by its
  acceptance sequence number ``seq``; ``kind`` 1 commit (``key`` = txid), 2 reveal (entry
  hash), 3 coin transaction (txid). It is also where entry and commit bytes live.
- ``dblocks``, ``ablocks``, ``ecblocks``, ``fblocks``: one row per height with both lookup
  keys (docs/formats.md §9.3 "Block lookup keys") and the exact block bytes; ``dblocks.floor_seq``
  is the journal floor of that height: every journal row with ``seq <= floor_seq`` was
  accepted before the block was cut, so it is recorded in that height or an earlier one, or
  is listed in ``carry``.
- ``carry``: journal rows at or below the last floor still waiting (held reveals, commits
  in a block not yet consumed by a reveal); rewritten with each block.
- ``eblocks``: entry blocks by KeyMR, with full hash, chain, sequence and height.
- ``entry_index``: entries recorded in saved blocks: height and the journal rows of the
  reveal and of the commit that paid for it.
- ``chains``: head entry block of each chain.
- ``balances``: ``ec`` (by public key, in entry credits) and ``fct`` (by RCD hash, in minor
  units) as of the last saved block.
- ``txs``: coin transactions recorded in saved blocks.

Start-up replays ``carry`` and every journal row above the last floor, in ``seq`` order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ledger.node.errors import NodeError
from ledger.node.handoff import GroupWorker, settle

log = logging.getLogger(__name__)

T = TypeVar("T")

SCHEMA_VERSION = 2

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS journal (
    seq INTEGER PRIMARY KEY, kind INTEGER NOT NULL, key BLOB NOT NULL, raw BLOB NOT NULL,
    received_ms INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS journal_commits ON journal(key) WHERE kind = 1;
CREATE TABLE IF NOT EXISTS carry (seq INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS dblocks (
    height INTEGER PRIMARY KEY, keymr BLOB NOT NULL UNIQUE, full_hash BLOB NOT NULL,
    timestamp_min INTEGER NOT NULL, floor_seq INTEGER NOT NULL, raw BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS dblocks_full ON dblocks(full_hash);
CREATE INDEX IF NOT EXISTS dblocks_floor ON dblocks(floor_seq);
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
CREATE INDEX IF NOT EXISTS eblocks_chain ON eblocks(chain_id, height);
CREATE TABLE IF NOT EXISTS entry_index (
    entry_hash BLOB PRIMARY KEY, height INTEGER NOT NULL, reveal_seq INTEGER NOT NULL,
    commit_seq INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS chains (
    chain_id BLOB PRIMARY KEY, head_keymr BLOB NOT NULL, head_full_hash BLOB NOT NULL,
    sequence INTEGER NOT NULL, created_height INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS balances (
    kind TEXT NOT NULL, key BLOB NOT NULL, amount INTEGER NOT NULL,
    PRIMARY KEY (kind, key)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS txs (
    txid BLOB PRIMARY KEY, full_hash BLOB NOT NULL, height INTEGER NOT NULL,
    fblock_keymr BLOB NOT NULL, raw BLOB NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS txs_full ON txs(full_hash);
"""


class StoreError(NodeError, RuntimeError):
    """The store could not complete a write (disk full, I/O error); nothing of it was applied.

    Attributes:
        disk_full: SQLite answered ``SQLITE_FULL`` (the disk or the database is full).
    """

    def __init__(self, message: str, *, disk_full: bool = False) -> None:
        super().__init__(message)
        self.disk_full = disk_full


class SchemaMismatch(StoreError):
    """The database file was written by another version of the node's schema."""


def connect(path: Path, *, synchronous: str = "FULL") -> sqlite3.Connection:
    """Open ``path`` in WAL mode with the given ``synchronous`` level and the schema applied.

    Raises:
        SchemaMismatch: the file holds another schema version.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    conn.execute("PRAGMA busy_timeout=10000")
    conn.execute("PRAGMA cache_size=-32000")
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    has_tables = conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone() is not None
    if version != SCHEMA_VERSION and (has_tables or version != 0):
        conn.close()
        raise SchemaMismatch(
            f"{path} has node schema version {version}, this node uses {SCHEMA_VERSION}"
        )
    conn.executescript(SCHEMA)
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
    return conn


def row_by_either_key(
    conn: sqlite3.Connection, sql: str, columns: tuple[str, str], key: bytes
) -> Any:
    """The first row of ``sql`` whose ``{column}`` is ``key``, trying each of ``columns``
    (a block's two lookup keys, docs/formats.md §9.3); None when neither matches.

    ``sql`` is a SELECT with one ``?`` and a ``{column}`` placeholder in its WHERE; the
    column names come from this package, never from a request.
    """
    for column in columns:
        row = conn.execute(sql.format(column=column), (key,)).fetchone()
        if row is not None:
            return row
    return None


class _Job:
    """One queued write: a callable ``fn(conn)`` or a single journal row ``(sql, params)``."""

    __slots__ = ("fn", "row", "loop", "future", "result", "error")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[Any],
        *,
        fn: Callable[[sqlite3.Connection], Any] | None = None,
        row: tuple[str, tuple[Any, ...]] | None = None,
    ) -> None:
        self.fn = fn
        self.row = row
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

    Durability: a write's future resolves only after the ``COMMIT`` of the transaction
    holding it returned; with ``synchronous=FULL`` in WAL mode that commit has fsynced the
    WAL, so whatever a caller acknowledges after awaiting a write survives a crash.
    """

    def __init__(
        self,
        path: Path,
        *,
        synchronous: str = "FULL",
        max_batch: int = 4000,
        checkpoint_interval_s: float = 0.5,
    ) -> None:
        if synchronous.upper() not in ("FULL", "NORMAL", "EXTRA", "OFF"):
            raise ValueError(f"unknown SQLite synchronous level {synchronous!r}")
        self.path = path
        self._synchronous = synchronous
        self._write_conn = connect(path, synchronous=synchronous)
        # WAL pages are copied back into the database by a checkpointer thread, so that a
        # commit (and the replies waiting for it) never pays for a checkpoint
        self._write_conn.execute("PRAGMA wal_autocheckpoint=0")
        self.read = connect(path, synchronous=synchronous)
        self._checkpoint_conn = connect(path, synchronous=synchronous)
        self._writer: GroupWorker[_Job] = GroupWorker(
            self._commit_batch, name="node-store-writer", max_group=max_batch
        )
        self._stop_checkpoints = threading.Event()
        self._checkpointer = threading.Thread(
            target=self._checkpoint_loop,
            args=(checkpoint_interval_s,),
            name="node-store-checkpoint",
            daemon=True,
        )
        self._checkpointer.start()
        self.batches = 0
        self.jobs = 0
        #: Why the last group commit failed (``"disk full"``, ...), None once one succeeds:
        #: the node's readiness check reports it.
        self.failing: str | None = None

    # -- writes ---------------------------------------------------------------------------

    async def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` inside a write transaction; return once it is committed to disk.

        ``fn`` runs in a savepoint: if it raises, only its own changes are rolled back and
        the exception is re-raised here.

        Raises:
            StoreError: the transaction failed (its whole batch was rolled back).
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._writer.put(_Job(loop, future, fn=fn))
        return await future

    async def append(self, sql: str, params: tuple[Any, ...]) -> None:
        """Execute one journal statement in the next group commit; return once it is on disk.

        Consecutive statements are run with ``executemany`` per SQL text, in order relative
        to the callable writes around them. Use only for statements that cannot fail on
        their own (``INSERT OR IGNORE`` / ``OR REPLACE`` into the journal tables).

        Raises:
            StoreError: the transaction failed (its whole batch was rolled back).
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._writer.put(_Job(loop, future, row=(sql, params)))
        await future

    async def barrier(self) -> None:
        """Return once every write queued before this call is on disk."""
        await self.write(_nothing)

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

    def _commit_batch(self, batch: list[_Job]) -> None:
        conn = self._write_conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            rows: list[tuple[str, tuple[Any, ...]]] = []
            for job in batch:
                if job.row is not None:
                    rows.append(job.row)
                    continue
                _flush_rows(conn, rows)
                _run_in_savepoint(conn, job)
            _flush_rows(conn, rows)
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            log.error("store write failed: %s", exc)
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            full = getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL
            for job in batch:
                job.error = StoreError(f"store write failed: {exc}", disk_full=full)
            self.failing = "disk full" if full else f"write failed ({type(exc).__name__})"
        else:
            self.failing = None
        self.batches += 1
        self.jobs += len(batch)
        settle(batch)

    def close(self) -> None:
        """Finish queued writes, then close both connections (idempotent)."""
        if self._writer.closed:
            return
        self._writer.close()
        self._stop_checkpoints.set()
        self._checkpointer.join(timeout=30)
        self._checkpoint_conn.close()
        self._write_conn.close()
        self.read.close()

    def _checkpoint_loop(self, interval_s: float) -> None:
        """Copy committed WAL pages into the database file (``PASSIVE``: never blocks the writer)."""
        while not self._stop_checkpoints.wait(interval_s):
            try:
                self._checkpoint_conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            except sqlite3.Error as exc:
                log.warning("WAL checkpoint failed (will retry): %s", exc)

    # -- meta -----------------------------------------------------------------------------

    def get_meta(self, key: str) -> bytes | None:
        row = self.read.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else bytes(row[0])


def _nothing(conn: sqlite3.Connection) -> None:
    return None


def _flush_rows(conn: sqlite3.Connection, rows: list[tuple[str, tuple[Any, ...]]]) -> None:
    """Execute queued journal rows, in order, then clear the list.

    A run of rows with the same ``INSERT ... VALUES (?, ...)`` text becomes multi-row
    INSERT statements (chunks of at most ``_MULTI_ROW_MAX`` rows): one SQLite step per chunk
    instead of one per row, which also keeps the writer thread from taking the GIL back
    for every row.
    """
    start = 0
    while start < len(rows):
        sql = rows[start][0]
        end = start + 1
        while end < len(rows) and rows[end][0] == sql:
            end += 1
        _execute_run(conn, sql, [params for _sql, params in rows[start:end]])
        start = end
    rows.clear()


_MULTI_ROW_MAX = 256


def insert_rows(conn: sqlite3.Connection, sql: str, params: list[tuple[Any, ...]]) -> None:
    """Run ``sql`` (``INSERT ... VALUES (?, ...)``) for every row of ``params`` as multi-row
    statements of at most 256 rows: fewer SQLite steps, and fewer GIL hand-overs."""
    _execute_run(conn, sql, params)


def _execute_run(conn: sqlite3.Connection, sql: str, params: list[tuple[Any, ...]]) -> None:
    if not params:
        return
    head, values, group = sql.rpartition(" VALUES ")
    if not values or not group.startswith("(") or len(params) == 1:
        conn.executemany(sql, params)
        return
    done = 0
    while done < len(params):
        size = min(_MULTI_ROW_MAX, 1 << ((len(params) - done).bit_length() - 1))
        chunk = params[done : done + size]
        statement = f"{head} VALUES {','.join([group] * size)}"
        conn.execute(statement, [value for row in chunk for value in row])
        done += size


def _run_in_savepoint(conn: sqlite3.Connection, job: _Job) -> None:
    assert job.fn is not None
    conn.execute("SAVEPOINT job")
    try:
        job.result = job.fn(conn)
        conn.execute("RELEASE job")
    except Exception as exc:  # one job's own failure must not sink the batch
        conn.execute("ROLLBACK TO job")
        conn.execute("RELEASE job")
        job.error = exc


def put_meta(conn: sqlite3.Connection, key: str, value: bytes) -> None:
    """Insert or replace one ``meta`` fact (inside a write job)."""
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))
