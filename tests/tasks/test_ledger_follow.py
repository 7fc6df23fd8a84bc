"""The ``ledger`` stage while a run publishes: blocks-only sweeps and ``LedgerFollower``,
against the fake node of ``test_ledger_stage`` (real blocks and receipts)."""

from __future__ import annotations

import httpx
import pytest

from connectors.audit import AuditStore
from connectors.node import NodeClient
from tasks.block_index import BlockIndex
from tasks.ledger_follow import LedgerFollower
from tasks.ledger_stage import sweep_ledger
from tests.harness.waiting import wait_until
from tests.tasks.test_ledger_stage import CHAIN, COLLECTION, FakeNode, published


@pytest.fixture
def store(tmp_path):
    # A file, as in a run: the in-memory database is one connection that every thread
    # shares, so the follower's transactions would interleave with the test's.
    with AuditStore(f"sqlite:///{tmp_path / 'audit.db'}") as audit:
        yield audit


def client_of(node: FakeNode) -> NodeClient:
    return NodeClient("http://node.test/v2", transport=httpx.MockTransport(node))


def stored_receipts(store: AuditStore) -> dict[str, object]:
    return {
        p.notarization.entry_hash: p.receipt.raw
        for p in store.proofs.records(collection=COLLECTION)
        if p.receipt is not None
    }


def test_blocks_only_sweep_builds_receipts_and_never_asks_the_node(store: AuditStore) -> None:
    hashes = published(store, 7)
    node = FakeNode({1: hashes[:2], 2: hashes[2:5]})  # the last two: in no block yet
    with client_of(node) as client:
        index = BlockIndex(client)
        index.follow(bytes.fromhex(CHAIN), 1)
        outcome = sweep_ledger(
            store, client, collection=COLLECTION, index=index, batch_size=2, ask_node=False
        )
    assert (outcome.recorded, outcome.rejected) == (5, 0)
    assert outcome.waiting == 2
    assert node.receipt_calls == 0
    assert sorted(node.eblock_calls) == [1, 2]
    # the receipts built are the node's own, byte for byte
    assert stored_receipts(store) == {h: node.receipts[h] for h in hashes[:5]}
    assert {k: v for k, v in store.runs.summary(COLLECTION).items() if v} == {
        "ledger": 5,
        "multi_az": 2,
    }


def test_blocks_only_sweep_stops_at_the_first_page_with_nothing_in_a_block(
    store: AuditStore,
) -> None:
    hashes = published(store, 8)
    node = FakeNode({1: hashes[:2], 2: []})
    with client_of(node) as client:
        index = BlockIndex(client)
        index.follow(bytes.fromhex(CHAIN), 0)
        outcome = sweep_ledger(
            store, client, collection=COLLECTION, index=index, batch_size=2, ask_node=False
        )
    # page 1 recorded; page 2 has nothing in a block: pages 3 and 4 are not read
    assert (outcome.recorded, outcome.waiting) == (2, 2)
    assert node.receipt_calls == 0


def test_blocks_only_sweep_takes_rows_above_after_id_and_needs_a_followed_chain(
    store: AuditStore,
) -> None:
    hashes = published(store, 4)
    node = FakeNode({1: hashes})
    waiting = store.notarizations.pending_entries(stage_from="published", stage_below="ledger")
    with client_of(node) as client:
        unknown = BlockIndex(client)  # knows no chain: builds nothing, asks nothing
        outcome = sweep_ledger(store, client, collection=COLLECTION, index=unknown, ask_node=False)
        assert (outcome.recorded, node.receipt_calls, node.eblock_calls) == (0, 0, [])
        index = BlockIndex(client)
        index.follow(bytes.fromhex(CHAIN), 1)
        outcome = sweep_ledger(
            store,
            client,
            collection=COLLECTION,
            index=index,
            after_id=waiting[1][0],
            ask_node=False,
        )
    assert outcome.recorded == 2
    assert set(stored_receipts(store)) == set(hashes[2:])


def test_follow_checks_its_arguments() -> None:
    with client_of(FakeNode({0: []})) as client:
        index = BlockIndex(client)
        with pytest.raises(ValueError):
            index.follow(b"short", 0)
        with pytest.raises(ValueError):
            index.follow(bytes(32), -1)
        with pytest.raises(ValueError):
            LedgerFollower(
                AuditStore("sqlite://"), client, collection="c", chain_id="ab", after_id=0
            )


def test_follower_records_each_new_block_while_the_run_goes_on(store: AuditStore) -> None:
    earlier = published(store, 1)  # a row of an earlier run: left to the full sweep
    after_id = store.notarizations.newest_id()
    hashes = published(store, 4, first=1)
    node = FakeNode({1: earlier, 2: hashes[:2], 3: hashes[2:]})
    node.height = 2
    with (
        client_of(node) as client,
        LedgerFollower(
            store, client, collection=COLLECTION, chain_id=CHAIN, after_id=after_id, poll_s=0.01
        ) as follower,
    ):
        wait_until(lambda: len(stored_receipts(store)) == 2, 10, what="block 2's receipts")
        node.height = 3  # a new block: swept at the next poll
        wait_until(lambda: len(stored_receipts(store)) == 4, 10, what="block 3's receipts")
    assert follower.error is None
    assert follower.outcome.recorded == 4
    assert set(stored_receipts(store)) == set(hashes)
    assert node.receipt_calls == 0


def test_follower_that_loses_the_node_stops_and_says_why(store: AuditStore) -> None:
    published(store, 2)

    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with (
        NodeClient("http://node.test/v2", transport=httpx.MockTransport(down)) as client,
        LedgerFollower(
            store, client, collection=COLLECTION, chain_id=CHAIN, after_id=0, poll_s=0.01
        ) as follower,
    ):
        wait_until(lambda: follower.error is not None, 10, what="the follower's error")
    assert follower.error is not None and "refused" in follower.error
    assert follower.outcome.recorded == 0
    assert store.runs.summary(COLLECTION)["multi_az"] == 2  # nothing changed
