"""The ``ledger`` stage sweep against a fake node serving real receipts and blocks."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from connectors.audit import AuditStore, DocumentIn, NewNotarization
from connectors.node import NodeClient
from ledger.core.blocks.directory import DirectoryBlock
from ledger.core.blocks.entry_block import EntryBlock
from ledger.core.clock import ManualClock
from ledger.core.proof.steps import Step
from ledger.core.receipt import build_receipt
from tasks.block_index import BlockIndex
from tasks.documents import collection_chain_id, document_entry
from tasks.ledger_stage import follow_ledger, sweep_ledger
from tasks.verify import ReceiptRejected, TrustedDirectoryBlock, verify_node_receipt

COLLECTION = "sweep"
CHAIN = collection_chain_id(COLLECTION)


class FakeNode:
    """Receipts of the entries in ``blocks`` (height -> entry hashes); others not found yet.

    Blocks above ``height`` are not served yet. ``garbage`` heights serve a directory block
    that does not parse; ``forged`` heights serve entry block bytes (``raw-data``) other
    than the block their directory block lists.
    """

    def __init__(
        self,
        blocks: dict[int, list[str]],
        *,
        garbage: frozenset[int] = frozenset(),
        forged: frozenset[int] = frozenset(),
    ):
        self.receipts: dict[str, dict[str, Any]] = {}
        self.raw: dict[int, str] = {}
        self.eblocks: dict[str, tuple[int, str]] = {}  # keymr -> (height, raw hex)
        self.dblock_calls: list[int] = []
        self.eblock_calls: list[int] = []
        self.receipt_calls = 0
        self.height = max(blocks)  # the newest block made so far: later ones are unknown
        prev = None
        for height in range(max(blocks) + 1):
            hashes = blocks.get(height, [])
            eblock = EntryBlock.build(
                chain_id=bytes.fromhex(CHAIN),
                height=height,
                entries=[(bytes.fromhex(h), 0) for h in hashes] or [(bytes(32), 0)],
            )
            dblock = DirectoryBlock.build(
                prev=prev,
                network_id=0xFA92E5A4,
                timestamp_min=29_000_000 + height,
                admin_lookup_hash=bytes([1]) * 32,
                ec_header_hash=bytes([2]) * 32,
                fblock_key_mr=bytes([3]) * 32,
                entry_blocks=[(bytes.fromhex(CHAIN), eblock.key_mr())],
            )
            prev = dblock
            self.raw[height] = "00" if height in garbage else dblock.marshal().hex()
            served = eblock
            if height in forged:  # another entry list: its KeyMR is not the one listed
                served = EntryBlock.build(
                    chain_id=eblock.chain_id, height=height, entries=[(bytes([7]) * 32, 0)]
                )
            self.eblocks[eblock.key_mr().hex()] = (height, served.marshal().hex())
            for h in hashes:
                receipt = build_receipt(bytes.fromhex(h), eblock, dblock)
                self.receipts[h] = receipt.to_json()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        calls = body if isinstance(body, list) else [body]
        answers = [self.answer(c) for c in calls]
        return httpx.Response(200, json=answers if isinstance(body, list) else answers[0])

    def answer(self, call: dict[str, Any]) -> dict[str, Any]:
        params = call.get("params", {})
        if call["method"] == "heights":
            result = {"directoryblockheight": self.height}
            return {"jsonrpc": "2.0", "id": call["id"], "result": result}
        if call["method"] == "receipt":
            self.receipt_calls += 1
            receipt = self.receipts.get(params["hash"])
            if receipt is None or receipt["directoryblockheight"] > self.height:
                error = {"code": -32010, "message": "Receipt creation error"}
                return {"jsonrpc": "2.0", "id": call["id"], "error": error}
            return {"jsonrpc": "2.0", "id": call["id"], "result": {"receipt": receipt}}
        if call["method"] == "dblock-by-height":
            self.dblock_calls.append(params["height"])
            if params["height"] > self.height:
                error = {"code": -32008, "message": "Block not found"}
                return {"jsonrpc": "2.0", "id": call["id"], "error": error}
            result = {"dblock": {}, "rawdata": self.raw[params["height"]]}
            return {"jsonrpc": "2.0", "id": call["id"], "result": result}
        if call["method"] == "raw-data":
            height, raw = self.eblocks.get(params["hash"], (self.height + 1, ""))
            if height > self.height:
                error = {"code": -32008, "message": "Object not found"}
                return {"jsonrpc": "2.0", "id": call["id"], "error": error}
            self.eblock_calls.append(height)
            return {"jsonrpc": "2.0", "id": call["id"], "result": {"data": raw}}
        raise AssertionError(f"unexpected call {call}")


def published(store: AuditStore, count: int, *, first: int = 0) -> list[str]:
    """``count`` documents published (stage ``multi_az``); their entry hashes in id order.
    ``first``: the number of the first document (another call's documents are others)."""
    docs = [DocumentIn(f"f{i}", f"{i + 1:064x}", i) for i in range(first, first + count)]
    doc_ids = store.notarizations.upsert_documents("src", docs)
    ids = store.notarizations.add(
        [
            NewNotarization(d, COLLECTION, CHAIN, doc.sha256)
            for d, doc in zip(doc_ids, docs, strict=True)
        ]
    )
    hashes = [
        document_entry(
            CHAIN, sha256=doc.sha256, size_bytes=doc.size_bytes, path=doc.path
        ).entry_hash
        for doc in docs
    ]
    store.notarizations.mark_published(dict(zip(ids, hashes, strict=True)))
    store.notarizations.mark_stage(hashes, "multi_az")
    return hashes


@pytest.fixture
def store():
    with AuditStore("sqlite://") as audit:
        yield audit


def test_sweep_pages_through_rows_and_fetches_each_block_once(store: AuditStore) -> None:
    hashes = published(store, 7)
    node = FakeNode({3: hashes[:2], 4: hashes[2:6]})  # the last entry is in no block yet
    with NodeClient("http://node.test/v2", transport=httpx.MockTransport(node)) as client:
        outcome = sweep_ledger(store, client, collection=COLLECTION, batch_size=2)
    assert (outcome.recorded, outcome.waiting, outcome.rejected) == (6, 1, 0)
    # once per height across the four pages, and block 5 (not made yet) asked once
    assert sorted(node.dblock_calls) == [3, 4, 5]
    # the first page's receipts come from the node and name the chain and first block;
    # every later entry is found in the entry blocks read from there (one read each),
    # but the one in no block yet, asked again as a receipt
    assert node.receipt_calls == 2 + 1
    assert sorted(node.eblock_calls) == [3, 4]
    assert store.runs.receipt_count(COLLECTION) == 6
    assert {k: v for k, v in store.runs.summary(COLLECTION).items() if v} == {
        "ledger": 6,
        "multi_az": 1,
    }
    stored = {
        p.notarization.entry_hash: p.receipt for p in store.proofs.records(collection=COLLECTION)
    }
    for entry_hash in hashes[:6]:  # built from the blocks: the node's receipt, exactly
        receipt = stored[entry_hash]
        assert receipt is not None and receipt.raw == node.receipts[entry_hash]
        assert receipt.merkle_branch == node.receipts[entry_hash]["merklebranch"]


def test_entry_block_not_listed_is_not_used_its_entries_get_node_receipts(
    store: AuditStore,
) -> None:
    hashes = published(store, 6)
    node = FakeNode({1: hashes[:2], 2: hashes[2:4], 3: hashes[4:]}, forged=frozenset({2}))
    with NodeClient("http://node.test/v2", transport=httpx.MockTransport(node)) as client:
        outcome = sweep_ledger(store, client, collection=COLLECTION, batch_size=2)
    assert (outcome.recorded, outcome.waiting, outcome.rejected) == (6, 0, 0)
    # block 2's bytes do not hash to the KeyMR block 2 lists: its entries are asked
    assert node.receipt_calls == 2 + 2
    stored = {
        p.notarization.entry_hash: p.receipt for p in store.proofs.records(collection=COLLECTION)
    }
    assert all(stored[h] is not None and stored[h].raw == node.receipts[h] for h in hashes)


def test_receipts_are_built_only_from_blocks_of_the_chains_learned(store: AuditStore) -> None:
    hashes = published(store, 4)
    node = FakeNode({1: hashes[:2], 2: hashes[2:]})
    with NodeClient("http://node.test/v2", transport=httpx.MockTransport(node)) as client:
        index = BlockIndex(client)
        assert index.receipts(hashes) == {}  # nothing learned: no block read
        assert node.dblock_calls == [] and node.eblock_calls == []
        index.learn(node.receipts[hashes[0]])
        index.learn({"directoryblockheight": "x"})  # teaches nothing
        built = index.receipts(hashes[1:])
        assert built == {h: node.receipts[h] for h in hashes[1:]}
        assert index.receipts([f"{9:064x}"]) == {}  # block 3 not made: asked once
        assert sorted(node.dblock_calls) == [1, 2, 3]
        dblock = DirectoryBlock.unmarshal(bytes.fromhex(node.raw[2]))
        assert index.trusted(2) == TrustedDirectoryBlock(height=2, key_mr=dblock.key_mr())
        assert index.trusted(3) is None
        for h in hashes:
            verify_node_receipt(
                built.get(h, node.receipts[h]),
                entry_hash=h,
                dblock_raw=bytes.fromhex(node.raw[node.receipts[h]["directoryblockheight"]]),
            )


def test_block_that_does_not_parse_rejects_only_its_receipts(store: AuditStore) -> None:
    hashes = published(store, 4)
    node = FakeNode({1: hashes[:2], 2: hashes[2:]}, garbage=frozenset({2}))
    with NodeClient("http://node.test/v2", transport=httpx.MockTransport(node)) as client:
        outcome = sweep_ledger(store, client, collection=COLLECTION, batch_size=3)
    assert (outcome.recorded, outcome.rejected, outcome.waiting) == (2, 2, 0)
    assert all("step 6 (directory block)" in e for e in outcome.errors)
    assert {k: v for k, v in store.runs.summary(COLLECTION).items() if v} == {
        "ledger": 2,
        "failed": 2,
    }


def test_nothing_waiting_makes_no_node_call(store: AuditStore) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise AssertionError("no call expected")

    with NodeClient("http://node.test/v2", transport=httpx.MockTransport(refuse)) as client:
        outcome = sweep_ledger(store, client, collection=COLLECTION)
    assert (outcome.recorded, outcome.waiting) == (0, 0)


def test_trusted_block_verifies_like_raw_bytes() -> None:
    hashes = [
        document_entry(CHAIN, sha256=f"{i:064x}", size_bytes=1, path="p").entry_hash
        for i in range(3)
    ]
    node = FakeNode({0: hashes})
    raw = bytes.fromhex(node.raw[0])
    trusted = TrustedDirectoryBlock.parse(raw)
    receipt = node.receipts[hashes[1]]
    by_block = verify_node_receipt(receipt, entry_hash=hashes[1], dblock=trusted)
    by_bytes = verify_node_receipt(receipt, entry_hash=hashes[1], dblock_raw=raw)
    assert by_block == by_bytes and trusted.height == 0
    with pytest.raises(ReceiptRejected) as info:
        TrustedDirectoryBlock.parse(raw + b"\x00")
    assert info.value.step == Step.DIRECTORY_BLOCK
    with pytest.raises(ValueError):
        verify_node_receipt(receipt, entry_hash=hashes[1], dblock=trusted, dblock_raw=raw)
    with pytest.raises(ValueError):
        verify_node_receipt(receipt, entry_hash=hashes[1])


def test_follow_sweeps_at_each_new_block_until_nothing_waits(store: AuditStore) -> None:
    hashes = published(store, 4)
    node = FakeNode({1: hashes[:2], 3: hashes[2:]})
    node.height = 1
    clock = ManualClock(1000.0)

    def sleep(seconds: float) -> None:  # blocks 2 and 3 come one and two seconds later
        clock.advance(seconds)
        node.height = 1 + min(2, int(clock.now() - 1000.0))

    with NodeClient("http://node.test/v2", transport=httpx.MockTransport(node)) as client:
        outcome = follow_ledger(
            store, client, collection=COLLECTION, until=1030.0, clock=clock, sleep=sleep
        )
    assert (outcome.recorded, outcome.waiting) == (4, 0)
    # sweeps at heights 1, 2 and 3 only; the sweeps share the blocks read: the third finds
    # both entries in block 3 (asked before it was made, then read once)
    assert node.receipt_calls == 4 + 2
    assert node.dblock_calls == [1, 2, 3, 3] and node.eblock_calls == [1, 2, 3]
    assert clock.now() - 1000.0 == pytest.approx(2.0)  # done as soon as block 3 is seen


def test_follow_gives_up_at_its_deadline(store: AuditStore) -> None:
    hashes = published(store, 3)
    node = FakeNode({1: hashes[:1], 2: hashes[1:]})
    node.height = 1  # block 2 never comes
    clock = ManualClock(0.0)
    with NodeClient("http://node.test/v2", transport=httpx.MockTransport(node)) as client:
        once = follow_ledger(store, client, collection=COLLECTION, clock=clock, sleep=clock.advance)
        assert (once.recorded, once.waiting, clock.now()) == (1, 2, 0.0)  # no until: one sweep
        later = follow_ledger(
            store, client, collection=COLLECTION, until=5.0, clock=clock, sleep=clock.advance
        )
    assert (later.recorded, later.waiting) == (0, 2)
    assert clock.now() == pytest.approx(5.0)
    assert node.receipt_calls == 3 + 2  # no sweep without a new block
    with pytest.raises(ValueError):
        follow_ledger(store, client, poll_s=0)
