"""The node store: group commit, ordering, failure isolation, multi-row inserts, schema guard."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from ledger.node.rules import INSERT_JOURNAL
from ledger.node.store import SchemaMismatch, Store, insert_rows

pytestmark = pytest.mark.anyio


def journal_row(seq: int) -> tuple[int, int, bytes, bytes, int]:
    return (seq, 2, seq.to_bytes(32, "big"), b"raw%d" % seq, 1000 + seq)


def other_connection(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path)


async def test_a_write_is_committed_when_its_await_returns(tmp_path: Path) -> None:
    store = Store(tmp_path / "node.sqlite")
    try:
        await store.append(INSERT_JOURNAL, journal_row(1))
        # a separate connection sees it: the transaction holding it has committed
        with other_connection(store.path) as conn:
            assert conn.execute("SELECT seq FROM journal").fetchall() == [(1,)]
    finally:
        store.close()


async def test_concurrent_writes_are_grouped_and_keep_their_order(tmp_path: Path) -> None:
    store = Store(tmp_path / "node.sqlite")
    seen: list[int] = []

    def read_back(conn: sqlite3.Connection) -> int:
        seen.append(conn.execute("SELECT COUNT(*) FROM journal").fetchone()[0])
        return seen[-1]

    try:
        jobs = [store.append(INSERT_JOURNAL, journal_row(i)) for i in range(1, 301)]
        counted = store.write(read_back)  # queued after all 300 rows
        results = await asyncio.gather(*jobs, counted)
        assert results[-1] == 300  # the callable ran after every row queued before it
        assert store.batches < 300  # grouped into fewer transactions
        rows = store.read.execute("SELECT seq, key FROM journal ORDER BY seq").fetchall()
        assert [r[0] for r in rows] == list(range(1, 301))
    finally:
        store.close()


async def test_a_failing_job_rolls_back_only_itself(tmp_path: Path) -> None:
    store = Store(tmp_path / "node.sqlite")

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO carry(seq) VALUES (7)")
        raise ValueError("boom")

    try:
        results = await asyncio.gather(
            store.append(INSERT_JOURNAL, journal_row(1)),
            store.write(broken),
            store.append(INSERT_JOURNAL, journal_row(2)),
            return_exceptions=True,
        )
        assert isinstance(results[1], ValueError)
        assert store.read.execute("SELECT COUNT(*) FROM carry").fetchone()[0] == 0
        assert store.read.execute("SELECT COUNT(*) FROM journal").fetchone()[0] == 2
    finally:
        store.close()


@pytest.mark.parametrize("count", [1, 2, 3, 255, 256, 257, 600])
def test_insert_rows_writes_every_row_once(tmp_path: Path, count: int) -> None:
    store = Store(tmp_path / "node.sqlite")
    try:
        rows = [journal_row(i) for i in range(1, count + 1)]
        store.write_sync(lambda conn: insert_rows(conn, INSERT_JOURNAL, rows))
        got = store.read.execute("SELECT seq, kind, key, raw, received_ms FROM journal").fetchall()
        assert [tuple(bytes(v) if isinstance(v, bytes) else v for v in r) for r in got] == rows
    finally:
        store.close()


def test_a_store_of_another_schema_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "node.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE commits (txid BLOB PRIMARY KEY)")
    with pytest.raises(SchemaMismatch):
        Store(path)


def test_unknown_synchronous_level_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        Store(tmp_path / "node.sqlite", synchronous="FULL; DROP TABLE journal")
