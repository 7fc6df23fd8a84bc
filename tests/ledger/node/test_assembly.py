"""Block assembly shortcuts give the bytes the core block classes give.

The node builds the entry credit block body from the commit bytes its process list kept
and derives txids from the marshalled commit; both must agree with ``ledger.core``.
"""

from __future__ import annotations

from ledger.core.blocks.entry_credit import EntryCreditBlock, ServerIndexNumber
from ledger.core.commit import CommitChain, CommitEntry
from ledger.core.entry import Entry
from ledger.core.hashing import ZERO_HASH
from ledger.core.keys import SigningKey
from ledger.node.assembly import _ec_body, _ec_objects
from ledger.node.process_list import ProcessList
from ledger.node.rules import commit_txid

KEY = SigningKey.from_seed(bytes([3]) * 32)


def commits() -> list[CommitEntry | CommitChain]:
    first = Entry.first_entry([b"assembly"], b"x")
    made: list[CommitEntry | CommitChain] = [CommitChain.create(KEY, first, timestamp_ms=5)]
    for i in range(4):
        entry = Entry(first.chain_id, (), b"%d" % i)
        made.append(CommitEntry.create(KEY, entry, timestamp_ms=10 + i))
    return made


def test_txid_from_the_marshalled_commit_is_the_commits_txid() -> None:
    for commit in commits():
        assert commit_txid(commit.marshal()) == commit.txid()


def test_ec_body_from_kept_bytes_equals_the_core_body() -> None:
    pl = ProcessList(height=7, start_s=0)
    made = commits()
    for commit in made[:3]:
        pl.add_commit(commit, commit.txid())
    pl.end_minute()
    pl.add_commit(made[3], made[3].txid(), made[3].marshal())
    pl.remove_commit(made[1], made[1].txid())  # an undone commit leaves no trace
    pl.end_minute()
    pl.add_commit(made[4], made[4].txid())
    while not pl.complete:
        pl.end_minute()
    prefix = (ServerIndexNumber(0),)
    core = EntryCreditBlock(7, ZERO_HASH, ZERO_HASH, prefix + _ec_objects(pl))
    assert _ec_body(pl, prefix) == core.body()
    assert len(pl.ec_raw) == len(pl.ec_objects)
