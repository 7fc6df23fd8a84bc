"""The one query layer both faces read from (``ledger.api.entry_reads``), on both backends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ledger.api import entry_reads, store
from ledger.api.accounts import create_account
from ledger.api.db import Database
from ledger.api.errors import PageNotFound
from ledger.api.models import Account, Stage
from ledger.core.entry import Entry

#: More candidates than one scan page of the search, so a match past the first page counts.
CANDIDATES = 450


@pytest.fixture
def db(database_url: str) -> Iterator[Database]:
    database = Database(database_url)
    database.create_schema()
    yield database
    database.dispose()


def _chain(db: Database, name: str) -> tuple[Account, Entry]:
    with db.write() as session:
        account, _ = create_account(session, name)
        first = Entry.first_entry([b"tag", name.encode()], b"first")
        store.accept_chain(session, account, first, callback=None, now=1.0)
    return account, first


def _append(db: Database, account: Account, entries: list[Entry]) -> None:
    with db.write() as session:
        for entry in entries:
            store.accept_entry(session, account, entry, callback=None, now=2.0)


def test_search_matches_as_a_multiset_oldest_first_across_scan_pages(db: Database) -> None:
    account, first = _chain(db, "search")
    entries = [
        Entry(first.chain_id, (b"tag", b"x" if i % 150 == 149 else b"y", b"tag"), bytes([i % 256]))
        for i in range(CANDIDATES)
    ]
    _append(db, account, entries)
    wanted = [e.hash().hex() for i, e in enumerate(entries) if i % 150 == 149]
    with db.read() as session:
        chain = entry_reads.owned_chain(session, account, first.chain_id.hex())
        page, total = entry_reads.search_entries(
            session, chain, [b"tag", b"x", b"tag"], limit=2, offset=1
        )
        oldest = entry_reads.oldest_entry_match(session, chain, [b"x", b"tag", b"tag"])
        once, total_once = entry_reads.search_entries(session, chain, [b"x"], limit=10, offset=0)
        none = entry_reads.oldest_entry_match(session, chain, [b"tag", b"tag", b"tag"])
    assert (total, [r.entry_hash for r in page]) == (3, wanted[1:3])
    assert oldest is not None and oldest.row.entry_hash == wanted[0]
    assert ([r.entry_hash for r in once], total_once) == (wanted, 3)
    assert none is None


def test_chain_search_is_the_oldest_of_the_accounts_own(db: Database) -> None:
    account, first = _chain(db, "mine")
    other, _ = _chain(db, "theirs")
    with db.read() as session:
        mine = entry_reads.oldest_chain_match(session, account, [b"tag"])
        theirs = entry_reads.oldest_chain_match(session, other, [b"mine"])
        rows, total = entry_reads.search_chains(session, account, [b"tag"], limit=5, offset=0)
    assert mine is not None and mine.chain_id == first.chain_id.hex()
    assert theirs is None
    assert total == 1 and rows[0][1].entry_hash == first.hash().hex()


def test_first_last_and_by_hash_inside_the_owners_chain_only(db: Database) -> None:
    account, first = _chain(db, "owner")
    other, other_first = _chain(db, "stranger")
    later = [Entry(first.chain_id, (b"n", bytes([i])), b"") for i in range(3)]
    _append(db, account, later)
    chain_hex = first.chain_id.hex()
    with db.read() as session:
        chain = entry_reads.owned_chain(session, account, chain_hex)
        assert entry_reads.first_entry(session, chain).row.entry_hash == first.hash().hex()
        last = entry_reads.last_entry(session, chain)
        assert (last.row.entry_hash, last.row.seq, last.failure) == (
            later[-1].hash().hex(),
            3,
            None,
        )
        assert entry_reads.get_entry(session, chain, later[0].hash().hex()).row.seq == 1
        with pytest.raises(PageNotFound, match="No such entry in this chain"):
            entry_reads.get_entry(session, chain, other_first.hash().hex())
        with pytest.raises(PageNotFound, match="No such chain"):
            entry_reads.owned_chain(session, other, chain_hex)
        assert entry_reads.owned_entry(session, other, first.hash().hex()) is None
        found = entry_reads.entry_by_hash(session, first.hash().hex())
        assert found is not None and found.account_id == account.id


def test_entry_pages_agree_as_hashes_and_rows_with_and_without_stages(db: Database) -> None:
    account, first = _chain(db, "pages")
    _append(db, account, [Entry(first.chain_id, (bytes([i]),), b"") for i in range(6)])
    with db.read() as session:
        chain = entry_reads.owned_chain(session, account, first.chain_id.hex())
        for stages in ([], [Stage.MULTI_AZ.value], [Stage.LEDGER.value]):
            hashes, h_total = entry_reads.entry_hashes(
                session, chain, stages=stages, limit=3, offset=2
            )
            rows, r_total = entry_reads.entry_rows(session, chain, stages=stages, limit=3, offset=2)
            assert hashes == [r.entry_hash for r in rows]
            assert h_total == r_total == (0 if stages == [Stage.LEDGER.value] else 7)
            assert [r.seq for r in rows] == ([] if h_total == 0 else [2, 3, 4])
