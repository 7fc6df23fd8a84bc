"""Commit, reveal, block production and receipts through the node's JSON-RPC interface."""

from __future__ import annotations

import pytest

from ledger.core.commit import CommitChain
from ledger.core.entry import Entry
from ledger.core.receipt import Receipt, verify_receipt
from tests.ledger.node.conftest import NodeHarness

pytestmark = pytest.mark.anyio


async def publish_chain(node: NodeHarness, ext_ids: list[bytes], content: bytes) -> Entry:
    first = Entry.first_entry(ext_ids, content)
    commit = CommitChain.create(node.ec_key, first, timestamp_ms=node.service.now_ms())
    result = await node.call("commit-chain", {"message": commit.marshal().hex()})
    assert result["entryhash"] == first.hash().hex()
    assert result["txid"] == commit.txid().hex()
    reveal = await node.call("reveal-chain", {"entry": first.marshal().hex()})
    assert reveal["chainid"] == first.chain_id.hex()
    return first


async def test_genesis_heights_and_properties(node: NodeHarness) -> None:
    heights = await node.call("heights")
    assert heights["directoryblockheight"] == 0
    props = await node.call("properties")
    assert props["nodeapiversion"] == "2.0"
    dblock = await node.call("dblock-by-height", {"height": 0})
    assert dblock["dblock"]["header"]["dbheight"] == 0
    head = await node.call("directory-block-head")
    assert head["keymr"] == dblock["dblock"]["keymr"]


async def test_chain_and_entries_reach_a_block_with_valid_receipts(node: NodeHarness) -> None:
    first = await publish_chain(node, [b"collection", b"test"], b"hello")
    entries = [await node.publish_entry(first.chain_id, b"doc %d" % i) for i in range(5)]
    pending = await node.call("pending-entries")
    assert {p["entryhash"] for p in pending} >= {e.hash().hex() for e in entries}
    err = await node.error("receipt", {"hash": entries[0].hash().hex()})
    assert err["code"] == -32010

    assert await node.next_block() == 1
    assert (await node.call("heights"))["directoryblockheight"] == 1

    for entry in [first, *entries]:
        got = await node.call("entry", {"hash": entry.hash().hex()})
        assert got["content"] == entry.content.hex()
        data = (await node.call("receipt", {"hash": entry.hash().hex()}))["receipt"]
        receipt = Receipt.from_json(data)
        dblock = (await node.call("dblock-by-height", {"height": 1}))["dblock"]
        verify_receipt(receipt, trusted_directory_block_keymr=bytes.fromhex(dblock["keymr"]))
        assert data["directoryblockheight"] == 1

    head = await node.call("chain-head", {"chainid": first.chain_id.hex()})
    eblock = await node.call("entry-block", {"keymr": head["chainhead"]})
    assert [e["entryhash"] for e in eblock["entrylist"]] == [
        e.hash().hex() for e in [first, *entries]
    ]
    ack = await node.call("ack", {"hash": entries[0].hash().hex(), "chainid": first.chain_id.hex()})
    assert ack["entrydata"]["status"] == "DBlockConfirmed"


async def test_repeated_commit_and_balance(node: NodeHarness) -> None:
    from ledger import devnet

    before = (await node.call("entry-credit-balance", {"address": devnet.DEV_EC_ADDRESS}))[
        "balance"
    ]
    first = Entry.first_entry([b"x"], b"")
    commit = CommitChain.create(node.ec_key, first, timestamp_ms=node.service.now_ms())
    await node.call("commit-chain", {"message": commit.marshal().hex()})
    err = await node.error("commit-chain", {"message": commit.marshal().hex()})
    assert err["code"] == -32011
    assert err["data"]["entryhash"] == first.hash().hex()
    after = (await node.call("entry-credit-balance", {"address": devnet.DEV_EC_ADDRESS}))["balance"]
    assert before - after == 11


async def test_reveal_before_commit_is_held_then_recorded(node: NodeHarness) -> None:
    first = Entry.first_entry([b"held"], b"data")
    await node.call("reveal-chain", {"entry": first.marshal().hex()})
    status = await node.call("ack", {"hash": first.hash().hex(), "chainid": first.chain_id.hex()})
    assert status["entrydata"]["status"] == "NotConfirmed"
    commit = CommitChain.create(node.ec_key, first, timestamp_ms=node.service.now_ms())
    await node.call("commit-chain", {"message": commit.marshal().hex()})
    await node.next_block()
    status = await node.call("ack", {"hash": first.hash().hex(), "chainid": first.chain_id.hex()})
    assert status["entrydata"]["status"] == "DBlockConfirmed"


async def test_blocks_link(node: NodeHarness) -> None:
    await node.next_block()
    await node.next_block()
    prev = (await node.call("dblock-by-height", {"height": 1}))["dblock"]
    cur = (await node.call("dblock-by-height", {"height": 2}))["dblock"]
    assert cur["header"]["prevkeymr"] == prev["keymr"]
    for method in ("ablock-by-height", "ecblock-by-height", "fblock-by-height"):
        result = await node.call(method, {"height": 2})
        assert result["rawdata"]
