"""Fault: the node's wall clock jumps (NTP step, VM resume, an operator's mistake).

The node takes all time from one injectable clock (``ledger.core.clock``); these tests
drive a ``ManualClock`` and ``NodeService.tick()`` as the block producer would, on the
production block time (600 s, one-minute markers).

What is proven, for a jump forward by hours and back by minutes (also across a restart):

* heights keep increasing by one, each directory block links to the one before it
  (previous KeyMR and full hash), and block timestamps never go backward;
* a forward jump closes the open block at once (its entries are kept) and does not
  produce a run of empty blocks for the skipped hours;
* a backward jump makes the open block wait until the clock is past its end again;
* commits whose timestamp is more than 60 minutes from the node clock are refused with
  JSON-RPC error -32602 (the node's rendering of the network's time-window rule,
  docs/formats.md §2.4), commits inside the window are accepted;
* every entry acknowledged before, during and after the jumps is in a saved block with a
  receipt.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ledger.core.clock import ManualClock
from ledger.core.commit import CommitEntry
from ledger.core.entry import Entry
from ledger.node.settings import NodeSettings
from tests.ledger.node.conftest import START_S, NodeHarness, open_node

pytestmark = pytest.mark.anyio

BLOCK_TIME_S = 600.0
MINUTE_S = BLOCK_TIME_S / 10
HOUR_S = 3600.0


def _settings(tmp_path: Path) -> NodeSettings:
    return NodeSettings(data_dir=tmp_path / "node", block_time_s=BLOCK_TIME_S)


async def _run_minutes(node: NodeHarness, minutes: int) -> int:
    """Advance the clock minute by minute, ticking after each; returns blocks saved."""
    saved = 0
    for _ in range(minutes):
        node.clock.advance(MINUTE_S)
        saved += await node.service.tick()
    return saved


async def _height(node: NodeHarness) -> int:
    return int((await node.call("heights"))["directoryblockheight"])


async def _until_block(node: NodeHarness, *, max_minutes: int = 60) -> None:
    """Advance minute by minute until one block is saved (at most ``max_minutes``)."""
    before = await _height(node)
    for _ in range(max_minutes):
        if await _run_minutes(node, 1):
            assert await _height(node) == before + 1
            return
    raise AssertionError(f"no block saved within {max_minutes} minutes of clock time")


async def _check_chain_of_blocks(node: NodeHarness) -> list[int]:
    """Heights 0..tip all present and linked, timestamps non-decreasing; returns them."""
    tip = await _height(node)
    previous: dict[str, Any] | None = None
    stamps = []
    for height in range(tip + 1):
        block = (await node.call("dblock-by-height", {"height": height}))["dblock"]
        header = block["header"]
        assert header["dbheight"] == height
        if previous is not None:
            assert header["prevkeymr"] == previous["keymr"], f"height {height} does not link"
            assert header["prevfullhash"] == previous["dbhash"], f"height {height} does not link"
            assert header["timestamp"] >= previous["header"]["timestamp"], (
                f"block {height} is stamped before block {height - 1}"
            )
        stamps.append(header["timestamp"])
        previous = block
    return stamps


async def _assert_recorded(node: NodeHarness, entries: list[Entry]) -> None:
    """Every entry has a receipt (it is in a saved directory block)."""
    for entry in entries:
        receipt = (await node.call("receipt", {"hash": entry.hash().hex()}))["receipt"]
        assert receipt["entry"]["entryhash"] == entry.hash().hex()


def _commit(node: NodeHarness, entry: Entry, *, at_s: float) -> dict[str, str]:
    commit = CommitEntry.create(node.ec_key, entry, timestamp_ms=int(at_s * 1000))
    return {"message": commit.marshal().hex()}


async def test_forward_jump_of_hours_closes_the_block_and_refuses_stale_commits(
    tmp_path: Path,
) -> None:
    async with open_node(_settings(tmp_path), ManualClock(START_S)) as node:
        chain = await node.publish_chain([b"clock", b"forward"])
        await _until_block(node)
        before_jump = [await node.publish_entry(chain.chain_id, f"b{i}".encode()) for i in range(3)]
        stale = Entry(chain.chain_id, (b"stale",), b"signed before the jump")
        stale_commit = _commit(node, stale, at_s=node.clock.now())
        height = await _height(node)

        node.clock.advance(3 * HOUR_S)
        saved = await node.service.tick()
        # The open block is closed at once with its entries; no empty blocks for the gap.
        assert saved == 1 and await _height(node) == height + 1
        await _assert_recorded(node, before_jump)

        error = await node.error("commit-entry", stale_commit)
        assert (error["code"], error["message"]) == (-32602, "Invalid params")
        assert "60 minutes from the node clock" in error["data"]
        ahead = Entry(chain.chain_id, (b"ahead",), b"client clock 2 h fast")
        error = await node.error(
            "commit-entry", _commit(node, ahead, at_s=node.clock.now() + 2 * HOUR_S)
        )
        assert error["code"] == -32602

        after_jump = [await node.publish_entry(chain.chain_id, f"a{i}".encode()) for i in range(3)]
        await _until_block(node, max_minutes=11)  # the new block runs on the new time
        await _assert_recorded(node, [chain, *before_jump, *after_jump])
        stamps = await _check_chain_of_blocks(node)
        assert stamps[-1] - stamps[-2] >= 3 * HOUR_S / 60 - 10  # minutes: the gap is real


async def test_backward_jump_of_minutes_holds_the_block_until_time_catches_up(
    tmp_path: Path,
) -> None:
    async with open_node(_settings(tmp_path), ManualClock(START_S)) as node:
        chain = await node.publish_chain([b"clock", b"backward"])
        await _until_block(node)
        await _run_minutes(node, 4)  # into the middle of the next block
        before_jump = [await node.publish_entry(chain.chain_id, f"b{i}".encode()) for i in range(3)]
        jumped_from = node.clock.now()
        height = await _height(node)

        node.clock.set(jumped_from - 10 * MINUTE_S)
        # Inside the window both ways: a commit on the new (earlier) time and one made
        # just before the jump, now 10 minutes ahead of the node clock, are accepted.
        during = [await node.publish_entry(chain.chain_id, b"d0")]
        early = Entry(chain.chain_id, (b"pre-jump",), b"timestamped before the jump")
        await node.call("commit-entry", _commit(node, early, at_s=jumped_from))
        await node.call("reveal-entry", {"entry": early.marshal().hex()})
        during.append(early)

        # The block that was open keeps its schedule: 10 minutes of clock time bring the
        # clock back to where it was, then the 6 minutes it still had to run.
        assert await _run_minutes(node, 15) == 0
        assert await _height(node) == height
        await _until_block(node, max_minutes=2)
        await _assert_recorded(node, [chain, *before_jump, *during])
        after = [await node.publish_entry(chain.chain_id, b"after")]
        await _until_block(node, max_minutes=11)
        await _assert_recorded(node, after)
        await _check_chain_of_blocks(node)


async def test_restart_with_the_clock_set_back_keeps_timestamps_in_order(
    tmp_path: Path,
) -> None:
    """The node restarts while its clock is 10 minutes behind the last saved block (the
    clock was stepped back during the outage). Entries acknowledged before the restart
    are kept; the next block must not be stamped before the last one."""
    settings, clock = _settings(tmp_path), ManualClock(START_S)
    async with open_node(settings, clock) as node:
        chain = await node.publish_chain([b"clock", b"restart"])
        await _until_block(node)
        await _until_block(node)
        pending = [await node.publish_entry(chain.chain_id, f"p{i}".encode()) for i in range(2)]
        last = (await node.call("dblock-by-height", {"height": await _height(node)}))["dblock"]
    clock.set(last["header"]["timestamp"] * 60 - 10 * MINUTE_S)
    async with open_node(settings, clock) as node:
        more = [await node.publish_entry(chain.chain_id, b"after restart")]
        await _until_block(node, max_minutes=40)
        await _assert_recorded(node, [chain, *pending, *more])
        await _check_chain_of_blocks(node)
