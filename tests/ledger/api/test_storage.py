"""Storage: durability settings, schema, indexes and concurrent appends, on both backends."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from sqlalchemy import event, inspect, select, text

from ledger.api import entry_reads, store
from ledger.api.accounts import create_account
from ledger.api.db import Database
from ledger.api.models import EntryRow
from ledger.core.entry import Entry
from ledger.core.errors import LimitError


@pytest.fixture
def db(database_url: str):
    database = Database(database_url)
    database.create_schema()
    database.create_schema()  # idempotent
    yield database
    database.dispose()


def test_sqlite_runs_in_wal_mode_with_full_sync(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'sub' / 'api.sqlite'}")
    db.create_schema()
    with db.read() as session:
        assert session.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert session.execute(text("PRAGMA synchronous")).scalar() == 2  # FULL
        assert session.execute(text("PRAGMA foreign_keys")).scalar() == 1
    assert (tmp_path / "sub" / "api.sqlite").exists()
    db.dispose()


def test_sqlite_writers_begin_immediate_and_readers_deferred(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'api.sqlite'}")
    db.create_schema()
    seen: list[str] = []
    event.listen(db.engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
    with db.write() as session:
        session.execute(text("SELECT 1"))
    with db.read() as session:
        session.execute(text("SELECT 1"))
    assert [s for s in seen if s.startswith("BEGIN")] == ["BEGIN IMMEDIATE", "BEGIN"]
    db.dispose()


def test_entries_are_indexed_by_chain_and_sequence(db: Database) -> None:
    inspector = inspect(db.engine)
    uniques = {tuple(u["column_names"]) for u in inspector.get_unique_constraints("entries")}
    indexes = {tuple(i["column_names"]) for i in inspector.get_indexes("entries")}
    assert ("chain_id", "seq") in uniques | indexes
    assert ("entry_hash",) in uniques | indexes


def test_write_rolls_back_on_error(db: Database) -> None:
    with pytest.raises(RuntimeError), db.write() as session:
        create_account(session, "ghost")
        raise RuntimeError("abort")
    with db.read() as session:
        assert session.execute(text("SELECT count(*) FROM accounts")).scalar() == 0


def test_concurrent_appends_get_distinct_consecutive_sequence_numbers(db: Database) -> None:
    with db.write() as session:
        account, _ = create_account(session, "writer")
        first = Entry.first_entry([b"concurrent"], b"")
        store.accept_chain(session, account, first, callback=None, now=1.0)
    errors: list[BaseException] = []

    def append(worker: int) -> None:
        try:
            for i in range(10):
                entry = Entry(first.chain_id, (bytes([worker]), bytes([i])), b"")
                with db.write() as session:
                    store.accept_entry(session, account, entry, callback=None, now=2.0)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=append, args=(w,)) for w in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with db.read() as session:
        seqs = sorted(
            session.scalars(select(EntryRow.seq).where(EntryRow.chain_id == first.chain_id.hex()))
        )
        chain = entry_reads.get_chain(session, account, first.chain_id.hex())
    assert seqs == list(range(61))
    assert chain is not None and chain.entry_count == 61


def test_content_bytes_survive_storage_exactly(db: Database) -> None:
    content = bytes(range(256)) * 4
    with db.write() as session:
        account, _ = create_account(session, "bytes")
        entry = Entry.first_entry([b"\x00", b"\xff" * 3], content)
        store.accept_chain(session, account, entry, callback=None, now=1.0)
    with db.read() as session:
        row = session.scalars(select(EntryRow)).one()
    assert bytes(row.content) == content
    assert row.entry_hash == entry.hash().hex()


def test_oversized_entries_cannot_even_be_built() -> None:
    with pytest.raises(LimitError):
        Entry.first_entry([b"x" * 5000], b"y" * 5239)
