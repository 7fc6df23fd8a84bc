"""The nonce search in a child process: the same nonce as in-process, the child ends with
its input, and a child that fails leaves the block to be mined here."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ledger.anchor.chain import MiningExhausted, PowChain, mine
from ledger.anchor.mining import MiningProcess
from ledger.core.clock import ManualClock
from ledger.core.pow.header import BlockHeader
from ledger.core.pow.params import PowParams

PARAMS = PowParams(difficulty_bits=12, confirmations=2)


def draft(nonce: int = 0, bits: int = PARAMS.bits) -> BlockHeader:
    return BlockHeader(1, bytes(range(32)), bytes(32), 1_700_000_000, bits, nonce)


def test_the_child_finds_the_nonce_mine_finds() -> None:
    process = MiningProcess()
    try:
        for start in (0, 1_000, 77_777):
            header = draft(start)
            found = process.mine(header)
            assert found == mine(header) and found.meets_target()
        child = process._child.process
        assert child is not None and child.poll() is None  # one child for every block
    finally:
        process.close()
    assert child.wait(timeout=5) == 0  # it ended at the end of its input


def test_exhausted_nonces_are_reported_as_in_process() -> None:
    process = MiningProcess()
    hard = BlockHeader(1, bytes(32), bytes(32), 1, PowParams(difficulty_bits=64).bits, 2**32 - 3)
    try:
        with pytest.raises(MiningExhausted):
            mine(hard)
        with pytest.raises(MiningExhausted):
            process.mine(hard)
    finally:
        process.close()


def test_a_child_that_cannot_run_leaves_the_block_to_this_process(
    caplog: pytest.LogCaptureFixture,
) -> None:
    process = MiningProcess(python=sys.executable + "-missing")
    assert process.mine(draft()) == mine(draft())
    assert "mining this block in-process" in caplog.text


def test_a_child_killed_between_blocks_is_replaced(tmp_path: Path) -> None:
    process = MiningProcess()
    chain = PowChain(
        tmp_path / "pow.sqlite",
        params=PARAMS,
        clock=ManualClock(),
        synchronous="NORMAL",
        miner=process.mine,
    )
    try:
        chain.open()
        first = process._child.process
        assert first is not None
        first.kill()
        first.wait()
        block = chain.mine_block()  # this one falls back or restarts; either way it is valid
        chain.mine_block()
        assert block.header.meets_target() and chain.tip() is not None
        assert chain.tip().height == 2
        assert process._child.process is not None and process._child.process is not first
    finally:
        chain.close()
        process.close()
