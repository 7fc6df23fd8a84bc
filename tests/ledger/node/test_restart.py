"""A restarted node (same data folder) has every acknowledged message exactly once.

The journal replay must rebuild: pending commits, reveals and coin transactions (in their
acceptance order, so credits bought before a commit pay for it), held reveals, and commits
recorded in a saved block that still wait for their reveal (the ``carry`` list).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger import devnet
from ledger.core.addresses import ec_public_address, rcd_hash, rcd_hash_from_fct_address
from ledger.core.clock import ManualClock
from ledger.core.commit import CommitEntry
from ledger.core.entry import Entry
from ledger.core.keys import SigningKey
from ledger.core.transaction import Transaction, TxAddress
from tests.ledger.node.conftest import FCT_KEY, START_S, NodeHarness, make_settings, open_node
from tests.ledger.node.test_blocks import coin_tx, submit

pytestmark = pytest.mark.anyio

DEV_RCD = rcd_hash_from_fct_address(devnet.DEV_FCT_ADDRESS)


def buy_credits(node: NodeHarness, key: SigningKey, credits: int) -> Transaction:
    ts = node.service.now_ms()
    out = (TxAddress(credits * node.settings.ec_rate, key.public_key),)
    draft = Transaction(ts, (TxAddress(out[0].amount, DEV_RCD),), (), out)
    fee = draft.fee(node.settings.ec_rate)
    return Transaction(ts, (TxAddress(out[0].amount + fee, DEV_RCD),), (), out).sign([FCT_KEY])


async def state_of(node: NodeHarness) -> dict[str, object]:
    return {
        "pending": sorted(
            (p["entryhash"], p["status"]) for p in await node.call("pending-entries")
        ),
        "txs": sorted(t["transactionid"] for t in await node.call("pending-transactions")),
        "balances": node.service.balance_hash(temporary=True),
        "heights": await node.call("heights"),
        "head": await node.call("directory-block-head"),
    }


async def test_pending_messages_survive_a_restart(tmp_path: Path) -> None:
    settings, clock = make_settings(tmp_path), ManualClock(START_S)
    payer = SigningKey.from_seed(bytes([42]) * 32)
    async with open_node(settings, clock) as node:
        chain = await node.publish_chain([b"restart"])
        await node.next_block()
        saved_entry = await node.publish_entry(chain.chain_id, b"saved soon")
        # committed in block 2, revealed only after the restart (carried open commit)
        late = Entry(chain.chain_id, (), b"revealed after restart")
        late_commit = CommitEntry.create(node.ec_key, late, timestamp_ms=node.service.now_ms())
        await node.call("commit-entry", {"message": late_commit.marshal().hex()})
        # held reveal whose commit comes after the restart (carried held reveal)
        held = Entry(chain.chain_id, (), b"held across restart")
        await node.call("reveal-entry", {"entry": held.marshal().hex()})
        await node.next_block()
        # pending (not in a block): credits bought, then spent by a commit from the payer
        await submit(node, buy_credits(node, payer, 5))
        paid = Entry(chain.chain_id, (), b"paid with fresh credits")
        commit = CommitEntry.create(payer, paid, timestamp_ms=node.service.now_ms())
        await node.call("commit-entry", {"message": commit.marshal().hex()})
        await node.call("reveal-entry", {"entry": paid.marshal().hex()})
        tx = coin_tx(node, 31337)
        await submit(node, tx)
        before = await state_of(node)
        assert node.service.entry_status(saved_entry.hash()) == "DBlockConfirmed"

    async with open_node(settings, clock) as node:
        assert await state_of(node) == before
        payer_balance = await node.call(
            "entry-credit-balance", {"address": ec_public_address(payer.public_key)}
        )
        assert payer_balance["balance"] == 4
        await node.call("reveal-entry", {"entry": late.marshal().hex()})
        held_commit = CommitEntry.create(node.ec_key, held, timestamp_ms=node.service.now_ms())
        await node.call("commit-entry", {"message": held_commit.marshal().hex()})
        again = await node.error("commit-entry", {"message": commit.marshal().hex()})
        assert again["code"] == -32011  # the replay filter remembers journaled commits
        await node.next_block()
        for entry in (late, held, paid):
            assert node.service.entry_status(entry.hash()) == "DBlockConfirmed"
        assert await node.call("pending-entries") == []
        assert (await node.call("coin-ack", {"txid": tx.txid().hex()}))[
            "status"
        ] == "DBlockConfirmed"
        heights = await node.call("heights")
        assert heights["directoryblockheight"] == 3
        d3 = (await node.call("dblock-by-height", {"height": 3}))["dblock"]
        d2 = (await node.call("dblock-by-height", {"height": 2}))["dblock"]
        assert d3["header"]["prevkeymr"] == d2["keymr"]


async def test_restart_twice_without_new_messages_changes_nothing(tmp_path: Path) -> None:
    settings, clock = make_settings(tmp_path), ManualClock(START_S)
    async with open_node(settings, clock) as node:
        chain = await node.publish_chain([b"idempotent replay"])
        await node.publish_entry(chain.chain_id, b"x")
        first = await state_of(node)
    for _ in range(2):
        async with open_node(settings, clock) as node:
            assert await state_of(node) == first
    async with open_node(settings, clock) as node:
        await node.next_block()
        entries = (
            await node.call(
                "entry-block",
                {
                    "keymr": (await node.call("chain-head", {"chainid": chain.chain_id.hex()}))[
                        "chainhead"
                    ]
                },
            )
        )["entrylist"]
        assert len(entries) == 2  # the chain's first entry and one more, each once


async def test_a_payment_to_a_new_address_replays_before_its_spend(tmp_path: Path) -> None:
    settings, clock = make_settings(tmp_path), ManualClock(START_S)
    spender = SigningKey.from_seed(bytes([5]) * 32)
    spender_rcd = rcd_hash(spender.public_key)
    async with open_node(settings, clock) as node:
        await submit(node, coin_tx(node, 10**6, to=spender_rcd))
        ts = node.service.now_ms()
        draft = Transaction(ts, (TxAddress(500_000, spender_rcd),), (TxAddress(400_000, DEV_RCD),))
        await submit(node, draft.sign([spender]))
        before = await state_of(node)
    async with open_node(settings, clock) as node:
        assert await state_of(node) == before
