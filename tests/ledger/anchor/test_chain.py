"""The bundled proof-of-work chain store and the embedded anchor backend."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ledger.anchor.backend import EmbeddedPowBackend, NotConfirmed
from ledger.anchor.chain import PowChain, mine
from ledger.core.anchor_record import WindowCommitment, decode_anchor_payload
from ledger.core.clock import ManualClock
from ledger.core.hashing import sha256
from ledger.core.pow.header import BlockHeader, difficulty_target, target_to_bits
from ledger.core.pow.merkle import root_from_path
from ledger.core.pow.params import PowParams
from ledger.core.pow.tx import PowTransaction

PARAMS = PowParams(difficulty_bits=8, confirmations=2)


def open_chain(path: Path, clock: ManualClock) -> PowChain:
    chain = PowChain(path / "pow.sqlite", params=PARAMS, clock=clock, synchronous="NORMAL")
    chain.open()
    return chain


def test_genesis_blocks_link_and_meet_the_target(tmp_path: Path) -> None:
    clock = ManualClock()
    chain = open_chain(tmp_path, clock)
    for _ in range(4):
        clock.advance(1)
        chain.mine_block()
    headers = [BlockHeader.unmarshal(h) for h in chain.headers(0, 10)]
    assert len(headers) == 5
    assert headers[0].prev_hash == bytes(32)
    for prev, cur in zip(headers, headers[1:], strict=False):
        assert cur.prev_hash == prev.hash()
        assert cur.meets_target() and cur.bits == PARAMS.bits
        assert cur.timestamp >= prev.timestamp
    tip = chain.tip()
    assert tip is not None and tip.height == 4 and tip.hash == headers[-1].hash()
    assert chain.block_by_hash(tip.hash) == tip
    chain.close()


def test_anchors_are_mined_with_paths_and_confirmations(tmp_path: Path) -> None:
    clock = ManualClock()
    chain = open_chain(tmp_path, clock)
    backend = EmbeddedPowBackend(chain)
    keymrs = [sha256(b"%d" % i) for i in range(5)]
    txids = [backend.submit_anchor(h, k) for h, k in enumerate(keymrs)]
    assert backend.submit_anchor(0, keymrs[0]) == txids[0]  # idempotent
    wtxid = backend.submit_window(WindowCommitment(bytes(20), 0, 4, sha256(b"root")))
    assert backend.inclusion(txids[0]) is None
    block = chain.mine_block()
    inc = backend.inclusion(txids[3])
    assert inc is not None and inc.block_height == block.height and inc.confirmations == 1
    assert inc.tx_index == 4  # after the coinbase
    with pytest.raises(NotConfirmed):
        backend.inclusion_proof(txids[3], depth=2)
    chain.mine_block()
    proof = backend.inclusion_proof(txids[3], depth=2)
    assert len(proof.headers) == 2
    header = BlockHeader.unmarshal(proof.headers[0])
    assert root_from_path(txids[3], proof.tx_index, proof.merkle_path) == header.merkle_root
    tx = PowTransaction.unmarshal(proof.transaction)
    assert decode_anchor_payload(tx.op_return_payloads()[0]) == (3, keymrs[3])
    assert backend.inclusion(wtxid) is not None
    assert proof.to_json()["txid"] == txids[3][::-1].hex()
    chain.close()


def test_chain_survives_reopen(tmp_path: Path) -> None:
    clock = ManualClock()
    chain = open_chain(tmp_path, clock)
    txid = EmbeddedPowBackend(chain).submit_anchor(9, sha256(b"x"))
    mined = chain.mine_block()
    chain.close()
    again = open_chain(tmp_path, clock)
    assert again.tip() == mined
    found = again.transaction(txid)
    assert found is not None and found.block_height == mined.height
    assert again.mine_block().height == mined.height + 1
    again.close()


def test_mining_meets_the_target() -> None:
    draft = BlockHeader(
        1, sha256(b"prev"), sha256(b"root"), 1_700_000_000, target_to_bits(difficulty_target(10)), 0
    )
    mined = mine(draft)
    assert mined.meets_target()
    assert int.from_bytes(mined.hash(), "little") <= difficulty_target(10)


def test_blocks_do_work_only_until_the_last_anchor_is_deep_enough(tmp_path: Path) -> None:
    clock = ManualClock()
    chain = open_chain(tmp_path, clock)
    backend = EmbeddedPowBackend(chain)
    assert not chain.awaits_block(2)  # genesis only: nothing to include or confirm
    txid = backend.submit_anchor(1, bytes(range(32)))
    assert chain.awaits_block(2)  # in the mempool
    chain.mine_block()
    assert chain.awaits_block(2)  # one confirmation of two
    assert not chain.awaits_block(1)
    chain.mine_block()
    assert not chain.awaits_block(2)
    assert backend.inclusion_proof(txid, depth=2).block_height == 1
    # Read from the store after a restart, not only kept in memory.
    chain.close()
    reopened = open_chain(tmp_path, clock)
    assert not reopened.awaits_block(2)
    assert reopened.awaits_block(3)


def test_tip_age_follows_the_clock(tmp_path: Path) -> None:
    clock = ManualClock()
    chain = open_chain(tmp_path, clock)
    clock.advance(42)
    assert chain.tip_age_s() == pytest.approx(42, abs=1)
    chain.mine_block()
    assert chain.tip_age_s() == pytest.approx(0, abs=1)


@pytest.mark.anyio
async def test_miner_idles_while_nothing_waits_and_mines_an_anchor(tmp_path: Path) -> None:
    clock = ManualClock()
    chain = open_chain(tmp_path, clock)
    backend = EmbeddedPowBackend(chain)
    stop = asyncio.Event()
    miner = asyncio.create_task(
        backend.run_miner(stop, interval_s=0.01, depth=2, idle_interval_s=30)
    )
    await asyncio.sleep(0.2)
    assert chain.tip().height == 0  # idle: no empty blocks
    txid = backend.submit_anchor(1, bytes(range(32)))
    for _ in range(200):
        found = backend.inclusion(txid)
        if found is not None and found.confirmations >= 2:
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.2)
    height = chain.tip().height
    assert height == 2  # the anchor's block and one more, then idle again
    clock.advance(31)  # the tip is now older than the idle interval: one block
    for _ in range(200):
        if chain.tip().height > height:
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)
    stop.set()
    await miner
    assert chain.tip().height == height + 1
