"""Reveals sent before their commit are held, up to a cap (count and bytes), and expire.

Through the JSON-RPC interface: over the cap the reveal is refused with Invalid params
(-32602) and nothing of it is kept; commits release held reveals and make room; held
reveals older than the commit window are dropped when a block is cut.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger.core.clock import ManualClock
from ledger.core.commit import CommitEntry
from ledger.core.entry import Entry
from tests.ledger.node.conftest import START_S, NodeHarness, make_settings, open_node

pytestmark = pytest.mark.anyio

INVALID_PARAMS = -32602


async def reveal(node: NodeHarness, entry: Entry) -> None:
    await node.call("reveal-entry", {"entry": entry.marshal().hex()})


async def test_reveals_over_the_cap_are_refused_until_commits_make_room(tmp_path: Path) -> None:
    settings = make_settings(tmp_path).model_copy(update={"max_held_reveals": 2})
    async with open_node(settings, ManualClock(START_S)) as node:
        chain = await node.publish_chain([b"held", b"cap"])
        early = [Entry(chain.chain_id, (b"early",), b"%d" % i) for i in range(3)]
        await reveal(node, early[0])
        await reveal(node, early[1])
        error = await node.error("reveal-entry", {"entry": early[2].marshal().hex()})
        assert error["code"] == INVALID_PARAMS
        assert "waiting for their commit" in error["data"]
        pending = {p["entryhash"] for p in await node.call("pending-entries")}
        assert early[2].hash().hex() not in pending
        assert {early[0].hash().hex(), early[1].hash().hex()} <= pending
        # the commit of a held reveal records it: room for one more
        commit = CommitEntry.create(node.ec_key, early[0], timestamp_ms=node.service.now_ms())
        await node.call("commit-entry", {"message": commit.marshal().hex()})
        await reveal(node, early[2])
        # an entry whose commit came first is never held, so never refused
        await node.publish_entry(chain.chain_id, b"paid first")


async def test_held_reveals_over_the_byte_cap_are_refused(tmp_path: Path) -> None:
    big = Entry(bytes(32), (), b"x" * 5000)
    cap = len(big.marshal()) + 100
    settings = make_settings(tmp_path).model_copy(update={"max_held_reveal_bytes": cap})
    async with open_node(settings, ManualClock(START_S)) as node:
        await reveal(node, big)  # its chain does not exist: held
        error = await node.error(
            "reveal-entry", {"entry": Entry(bytes(32), (), b"y" * 200).marshal().hex()}
        )
        assert error["code"] == INVALID_PARAMS
        await reveal(node, Entry(bytes(32), (), b"z"))  # small enough


async def test_held_reveals_expire_after_the_commit_window(tmp_path: Path) -> None:
    settings = make_settings(tmp_path).model_copy(
        update={"max_held_reveals": 1, "commit_window_s": 60.0}
    )
    clock = ManualClock(START_S)
    async with open_node(settings, clock) as node:
        chain = await node.publish_chain([b"held", b"expiry"])
        old = Entry(chain.chain_id, (), b"never committed")
        await reveal(node, old)
        clock.advance(61)
        await node.next_block()  # the cut drops it
        pending = {p["entryhash"] for p in await node.call("pending-entries")}
        assert old.hash().hex() not in pending
        await reveal(node, Entry(chain.chain_id, (), b"room again"))
