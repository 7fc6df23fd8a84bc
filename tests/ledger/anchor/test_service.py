"""The anchoring service with a real node in process: ``anchors``, records, proofs, restarts."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ledger import devnet
from ledger.anchor.app import build_runtime
from ledger.anchor.service import AnchorServiceError, _checked_block
from ledger.anchor.writer import LedgerWriter
from ledger.core.anchor_record import (
    POW_ANCHOR_CHAIN_ID,
    AnchorRecord,
    PowRef,
    anchor_chain_first_entry,
    window_root,
)
from ledger.core.entry import Entry
from ledger.core.hashing import sha256
from ledger.core.keys import SigningKey
from ledger.core.merkle import MerkleNode, walk_branch
from ledger.core.pow.encoding import from_display_hex
from ledger.core.pow.header import BlockHeader
from ledger.core.pow.merkle import root_from_path
from ledger.core.pow.params import PowParams
from ledger.core.proof.bundle import build_bundle
from ledger.core.proof.verify import verify_bundle
from tasks.documents import collection_chain, document_entry
from tests.ledger.anchor.bundles import policy_of
from tests.ledger.anchor.conftest import (
    CONFIRMATIONS,
    DIFFICULTY_BITS,
    WINDOW_BLOCKS,
    Network,
    RpcFailed,
    anchor_settings,
)

pytestmark = pytest.mark.anyio

POLICY = policy_of(PowParams(difficulty_bits=DIFFICULTY_BITS, confirmations=CONFIRMATIONS))


async def publish_document(net: Network, data: bytes, path: str = "a.txt") -> Entry:
    collection = collection_chain("tests")
    if not (await net.call("pending-entries")) and net.node.tip.height < 1:
        await net.publish_chain(list(collection.external_ids), collection.content)
    le = document_entry(
        collection.chain_id,
        sha256=hashlib.sha256(data).hexdigest(),
        size_bytes=len(data),
        path=path,
    )
    return await net.publish_entry(Entry(bytes.fromhex(le.chain_id), le.external_ids, le.content))


async def test_anchors_says_false_before_anchoring_and_errors_for_unknown(network: Network) -> None:
    await network.block()
    dblock = await network.call("dblock-by-height", {"height": 1})
    answer = await network.call("anchors", {"height": 1})
    assert answer == {
        "directoryblockheight": 1,
        "directoryblockkeymr": dblock["dblock"]["keymr"],
        "anchor_pow": False,
        "anchor_contract": False,
        "bitcoin": False,
        "ethereum": False,
    }
    with pytest.raises(RpcFailed) as missing:
        await network.call("anchors", {"height": 5})
    assert missing.value.error["code"] == -32008
    with pytest.raises(RpcFailed) as unknown:
        await network.call("anchors", {"hash": "ab" * 32})
    assert unknown.value.error["code"] == -32008
    with pytest.raises(RpcFailed) as no_params:
        await network.call("anchors", {})
    assert no_params.value.error["code"] == -32602


async def test_anchor_pow_and_contract_by_height_and_by_every_hash(network: Network) -> None:
    entry = await publish_document(network, b"first document")
    await network.block()
    before = await network.call("anchors", {"height": 1})
    await network.anchor_everything()
    answer = await network.call("anchors", {"height": 1})
    status = await network.anchor_call("anchor-status", {"height": 1})
    assert status["recorded"] and status["confirmations"] >= CONFIRMATIONS
    pow_answer = answer["anchor_pow"]
    assert pow_answer == {"transactionhash": status["txid"], "blockhash": status["blockhash"]}
    assert answer["bitcoin"] == pow_answer and answer["ethereum"] == answer["anchor_contract"]
    check_contract(answer, [await keymr(network, h) for h in range(3)])
    assert before["anchor_pow"] is False

    dblock = (await network.call("dblock-by-height", {"height": 1}))["dblock"]
    head = await network.call("chain-head", {"chainid": entry.chain_id.hex()})
    commit = await network.call(
        "ack", {"hash": entry.hash().hex(), "chainid": entry.chain_id.hex()}
    )
    keys = [
        entry.hash().hex(),
        head["chainhead"],
        dblock["keymr"],
        dblock["dbhash"],
        commit["committxid"],
    ]
    keys += [e["keymr"] for e in dblock["dbentries"][:3]]  # admin, entry credit, coin blocks
    for key in keys:
        assert await network.call("anchors", {"hash": key}) == answer, key


async def keymr(network: Network, height: int) -> bytes:
    return bytes.fromhex(
        (await network.call("dblock-by-height", {"height": height}))["dblock"]["keymr"]
    )


def check_contract(answer: dict[str, Any], keymrs: list[bytes]) -> None:
    """The window branch walks from the block's KeyMR to the window root of ``keymrs``."""
    contract = answer["anchor_contract"]
    low, high = contract["dbheightmin"], contract["dbheightmax"]
    height = answer["directoryblockheight"]
    assert low <= height <= high and high - low + 1 <= WINDOW_BLOCKS
    root = bytes.fromhex(contract["windowmr"])
    assert root == window_root(keymrs[low : high + 1])
    branch = [MerkleNode.from_json(n) for n in contract["merklebranch"]]
    assert walk_branch(bytes.fromhex(answer["directoryblockkeymr"]), branch) == root
    assert contract["contractaddress"].startswith("0x") and contract["txid"].startswith("0x")


async def test_window_anchors_slide_over_the_chain(network: Network) -> None:
    for i in range(6):
        await publish_document(network, b"doc %d" % i, path=f"d{i}.txt")
        await network.block()
        await network.anchor_everything()
    tip = network.node.tip.height
    keymrs = [await keymr(network, h) for h in range(tip + 1)]
    windows = set()
    for height in range(tip - 1):
        answer = await network.call("anchors", {"height": height})
        assert answer["anchor_pow"], height
        check_contract(answer, keymrs)
        windows.add(
            (answer["anchor_contract"]["dbheightmin"], answer["anchor_contract"]["dbheightmax"])
        )
    assert len(windows) > 2


async def test_the_anchor_chain_is_factomds_and_foreign_records_are_ignored(
    network: Network,
) -> None:
    await network.block()
    await network.anchor_everything()
    head = await network.call("chain-head", {"chainid": POW_ANCHOR_CHAIN_ID.hex()})
    eblock = await network.call("entry-block", {"keymr": head["chainhead"]})
    hashes = [e["entryhash"] for e in eblock["entrylist"]]
    assert anchor_chain_first_entry().hash().hex() in hashes

    await network.block()  # height 3, not anchored by the service
    height = network.node.tip.height
    real = await keymr(network, height)
    ref = PowRef("ab" * 32, "cd" * 32, 1, 1)
    trusted = SigningKey.from_seed(bytes.fromhex(devnet.DEV_ANCHOR_SEED_HEX))
    stranger = SigningKey.from_seed(sha256(b"stranger"))
    forged = [
        AnchorRecord(height, real, height + 1, pow=ref).to_entry(stranger),
        AnchorRecord(height, sha256(b"other"), height + 1, pow=ref).to_entry(trusted),
    ]
    for entry in forged:
        await network.publish_entry(entry)
    await network.block()
    for entry in forged:
        status = await network.call(
            "ack", {"hash": entry.hash().hex(), "chainid": entry.chain_id.hex()}
        )
        assert status["entrydata"]["status"] == "DBlockConfirmed"
    assert (await network.call("anchors", {"height": height}))["anchor_pow"] is False


async def test_proof_bundle_from_the_services_verifies_offline(network: Network) -> None:
    data = b"contract scan, page 1"
    entry = await publish_document(network, data)
    await network.block()
    await network.anchor_everything()
    receipt = (
        await network.call("receipt", {"hash": entry.hash().hex(), "includerawentry": True})
    )["receipt"]
    height = receipt["directoryblockheight"]
    dblock = await network.call("dblock-by-height", {"height": height})
    proof = await network.anchor_call("anchor-proof", {"height": height})
    assert proof["contract"] is not None
    bundle = build_bundle(
        document_sha256=hashlib.sha256(data).digest(),
        entry=bytes.fromhex(receipt["entry"]["raw"]),
        receipt=receipt,
        directory_block=bytes.fromhex(dblock["rawdata"]),
        anchor_proof=proof,
    )
    verify_bundle(bundle, document_bytes=data, policy=POLICY)
    anchors = await network.call("anchors", {"height": height})
    first_header = BlockHeader.unmarshal(bundle.anchor.headers[0])
    assert first_header.hash() == from_display_hex(anchors["anchor_pow"]["blockhash"])
    with pytest.raises(RpcFailed) as not_yet:
        await network.anchor_call("anchor-proof", {"height": height, "depth": 50})
    assert not_yet.value.error["code"] == -32008
    network.mine(3)
    deeper = await network.anchor_call("anchor-proof", {"height": height, "depth": 5})
    assert len(deeper["anchor"]["headers"]) == 5
    deep_bundle = build_bundle(
        document_sha256=bundle.document_sha256,
        entry=bundle.entry,
        receipt=receipt,
        directory_block=bundle.directory_block,
        anchor_proof=deeper,
    )
    verify_bundle(
        deep_bundle,
        document_bytes=data,
        policy=policy_of(PowParams(difficulty_bits=8, confirmations=5)),
    )


async def test_pow_chain_methods(network: Network) -> None:
    await network.block()
    await network.anchor_round()
    network.mine(3)
    info = await network.anchor_call("pow-info")
    assert info["difficultybits"] == DIFFICULTY_BITS and info["height"] == 3
    by_height = await network.anchor_call("pow-header", {"height": 1})
    by_hash = await network.anchor_call("pow-header", {"hash": by_height["blockhash"]})
    assert by_hash == by_height and by_height["confirmations"] == 3
    headers = (await network.anchor_call("pow-headers", {"start": 0, "count": 10}))["headers"]
    assert len(headers) == 4 and headers[1] == by_height["header"]
    status = await network.anchor_call("anchor-status", {"height": 1})
    tx = await network.anchor_call("pow-transaction", {"txid": status["txid"]})
    header = BlockHeader.unmarshal(bytes.fromhex(by_height["header"]))
    path = [bytes.fromhex(h) for h in tx["merklepath"]]
    assert root_from_path(from_display_hex(tx["txid"]), tx["txindex"], path) == header.merkle_root
    with pytest.raises(RpcFailed):
        await network.anchor_call("pow-header", {"height": 99})
    with pytest.raises(RpcFailed) as bad:
        await network.anchor_call("pow-transaction", {"txid": "xyz"})
    assert bad.value.error["code"] == -32602


async def test_rounds_resume_after_a_restart_without_resubmitting(
    network: Network, tmp_path: Path
) -> None:
    await network.block()
    first = await network.anchor_round()
    assert first.submitted == 2  # genesis and height 1
    await network.anchor.aclose()  # the service stops; its stores stay on disk
    network.anchor = build_runtime(
        anchor_settings(tmp_path), clock=network.clock, node_transport=network.node_transport
    )
    again = await network.anchor_round()
    assert again.submitted == 0
    network.mine(CONFIRMATIONS)
    assert (await network.anchor_round()).recorded == 2
    await network.block()
    assert (await network.call("anchors", {"height": 1}))["anchor_pow"]


def test_a_block_whose_bytes_do_not_hash_to_its_keymr_is_refused() -> None:
    from ledger.core.blocks.directory import DirectoryBlock

    block = DirectoryBlock.build(
        prev=None,
        network_id=1,
        timestamp_min=1,
        admin_lookup_hash=sha256(b"a"),
        ec_header_hash=sha256(b"e"),
        fblock_key_mr=sha256(b"f"),
    )
    good = {"rawdata": block.marshal().hex(), "dblock": {"keymr": block.key_mr().hex()}}
    assert _checked_block(good, 0).key_mr() == block.key_mr()
    with pytest.raises(AnchorServiceError):
        _checked_block({**good, "dblock": {"keymr": "00" * 32}}, 0)
    with pytest.raises(AnchorServiceError):
        _checked_block(good, 1)
    with pytest.raises(AnchorServiceError):
        _checked_block({"rawdata": "zz"}, 0)


async def _chain_entries(network: Network, chain_id: bytes) -> list[str]:
    """Entry hashes of every saved entry block of ``chain_id``, oldest block first."""
    head = await network.call("chain-head", {"chainid": chain_id.hex()})
    keymr, blocks = head["chainhead"], []
    while keymr and keymr != "00" * 32:
        eblock = await network.call("entry-block", {"keymr": keymr})
        blocks.append([e["entryhash"] for e in eblock["entrylist"]])
        keymr = eblock["header"]["prevkeymr"]
    return [h for block in reversed(blocks) for h in block]


def _copy_sqlite(source: Path, target: Path) -> None:
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)


@pytest.mark.parametrize("saved_first", [False, True], ids=["pending", "saved"])
async def test_a_state_older_than_the_node_does_not_record_an_anchor_twice(
    network: Network, tmp_path: Path, saved_first: bool
) -> None:
    """A restored backup holds the service's record before the node's (``Stack.stores``):
    records written between the two copies are on the node but not marked in the state.
    The service must find them on the node, not pay for and reveal them again."""
    await network.block()
    await network.anchor_round()
    network.mine(CONFIRMATIONS)
    settings = anchor_settings(tmp_path)
    older = tmp_path / "older.sqlite"
    _copy_sqlite(settings.state_path, older)
    first = await network.anchor_round()
    assert first.recorded == 2
    if saved_first:
        await network.block()
    await network.anchor.aclose()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{settings.state_path}{suffix}").unlink(missing_ok=True)
    older.rename(settings.state_path)
    network.anchor = build_runtime(
        settings, clock=network.clock, node_transport=network.node_transport
    )
    network.clock.advance(1.0)  # a restart takes time: new commits would have new txids
    await network.anchor_round()
    await network.block()
    hashes = await _chain_entries(network, POW_ANCHOR_CHAIN_ID)
    twice = {h for h in hashes if hashes.count(h) > 1}
    assert not twice, f"{len(twice)} anchor records written twice"
    heights = []
    for entry_hash in hashes[1:]:  # after the chain's first entry
        raw = (await network.call("raw-data", {"hash": entry_hash}))["data"]
        heights.append(AnchorRecord.from_content(Entry.unmarshal(bytes.fromhex(raw)).content))
    heights = [record.db_height for record in heights]
    assert sorted(heights) == [0, 1], heights
    assert (await network.call("anchors", {"height": 1}))["anchor_pow"]


async def test_the_writer_does_not_pay_again_for_what_the_node_holds(network: Network) -> None:
    """A round retried after a lost answer writes the same records again: the node must
    record each once, and a reveal it holds for its commit gets the commit only."""
    await network.block()
    chain = await network.publish_chain([b"writer retries"])
    await network.block()
    writer = LedgerWriter(network.anchor.node, ec_key=network.ec_key, clock=network.clock)
    entries = [Entry(chain.chain_id, (b"n", str(i).encode()), b"x") for i in range(3)]
    assert await writer.write(entries) == [True, True, True]
    network.clock.advance(1.0)  # a commit now would be a new transaction
    assert await writer.write(entries) == [True, True, True]
    held = Entry(chain.chain_id, (b"held",), b"")
    await network.call("reveal-entry", {"entry": held.marshal().hex()})
    assert await writer.write([held]) == [True]
    pending = await network.call("pending-entries", {"chainid": chain.chain_id.hex()})
    assert [p["status"] for p in pending if p["entryhash"] == held.hash().hex()] == [
        "TransactionACK"
    ]
    await network.block()
    hashes = await _chain_entries(network, chain.chain_id)
    assert sorted(hashes) == sorted(e.hash().hex() for e in [chain, *entries, held])
