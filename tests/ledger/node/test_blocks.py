"""Blocks as the node saves them (docs/formats.md §5), read back through JSON-RPC.

Every saved block's ``rawdata`` must unmarshal to a block that marshals to the same bytes
and hashes to the key it is stored under; the links between heights (previous KeyMR, full
hash, back-reference hash, header hash, ledger KeyMR, entry block chains) must hold across
many heights; minute markers must sit where factomd writes them.
"""

from __future__ import annotations

from typing import Any

import pytest

from ledger import devnet
from ledger.core.addresses import public_key_from_ec_address, rcd_hash, rcd_hash_from_fct_address
from ledger.core.blocks.admin import AdminBlock
from ledger.core.blocks.coin import FactoidBlock
from ledger.core.blocks.directory import DirectoryBlock
from ledger.core.blocks.entry_block import EntryBlock, is_minute_marker, minute_marker
from ledger.core.blocks.entry_credit import EntryCreditBlock, MinuteNumber, ServerIndexNumber
from ledger.core.commit import CommitChain, CommitEntry
from ledger.core.hashing import ZERO_HASH
from ledger.core.keys import SigningKey, verify_signature
from ledger.core.transaction import Transaction, TxAddress
from tests.ledger.node.conftest import FCT_KEY, NodeHarness

pytestmark = pytest.mark.anyio

ZERO = ZERO_HASH.hex()
DEV_RCD = rcd_hash_from_fct_address(devnet.DEV_FCT_ADDRESS)


def coin_tx(
    node: NodeHarness, amount: int, *, ec: bool = False, to: bytes | None = None
) -> Transaction:
    ts = node.service.now_ms()
    target = to or rcd_hash(SigningKey.from_seed(bytes([3]) * 32).public_key)
    out = (TxAddress(amount, public_key_from_ec_address(devnet.DEV_EC_ADDRESS) if ec else target),)
    outputs, ec_outputs = ((), out) if ec else (out, ())
    draft = Transaction(ts, (TxAddress(amount, DEV_RCD),), outputs, ec_outputs)
    fee = draft.fee(node.settings.ec_rate)
    return Transaction(ts, (TxAddress(amount + fee, DEV_RCD),), outputs, ec_outputs).sign([FCT_KEY])


async def submit(node: NodeHarness, tx: Transaction) -> None:
    result = await node.call("coin-submit", {"transaction": tx.marshal().hex()})
    assert result["txid"] == tx.txid().hex()


async def raw_of(node: NodeHarness, method: str, height: int) -> tuple[dict[str, Any], bytes]:
    result = await node.call(method, {"height": height})
    return result, bytes.fromhex(result["rawdata"])


async def check_height(
    node: NodeHarness, height: int, prev: dict[str, Any] | None
) -> dict[str, Any]:
    """Round-trip and link checks of every block of ``height``; returns what the next needs."""
    d_json, d_raw = await raw_of(node, "dblock-by-height", height)
    dblock = DirectoryBlock.unmarshal(d_raw)
    assert dblock.marshal() == d_raw and dblock.height == height
    assert d_json["dblock"]["keymr"] == dblock.key_mr().hex()
    assert d_json["dblock"]["dbhash"] == dblock.full_hash().hex()
    pairs = [(e.chain_id.hex(), e.key_mr.hex()) for e in dblock.entries]
    assert [c for c, _ in pairs[:3]] == ["0" * 63 + "a", "0" * 63 + "c", "0" * 63 + "f"]
    assert [c for c, _ in pairs[3:]] == sorted(c for c, _ in pairs[3:])

    _a, a_raw = await raw_of(node, "ablock-by-height", height)
    ablock = AdminBlock.unmarshal(a_raw)
    assert ablock.marshal() == a_raw and ablock.lookup_hash().hex() == pairs[0][1]
    _e, e_raw = await raw_of(node, "ecblock-by-height", height)
    ecblock = EntryCreditBlock.unmarshal(e_raw)
    assert ecblock.marshal() == e_raw and ecblock.header_hash().hex() == pairs[1][1]
    _f, f_raw = await raw_of(node, "fblock-by-height", height)
    fblock = FactoidBlock.unmarshal(f_raw)
    assert fblock.marshal() == f_raw and fblock.key_mr().hex() == pairs[2][1]

    if prev is None:
        assert (dblock.prev_key_mr, dblock.prev_full_hash) == (ZERO_HASH, ZERO_HASH)
        assert ablock.prev_back_ref_hash == ZERO_HASH
        assert (ecblock.prev_header_hash, ecblock.prev_full_hash) == (ZERO_HASH, ZERO_HASH)
        assert (fblock.prev_key_mr, fblock.prev_ledger_key_mr) == (ZERO_HASH, ZERO_HASH)
    else:
        assert dblock.prev_key_mr == prev["d"].key_mr()
        assert dblock.prev_full_hash == prev["d"].full_hash()
        assert ablock.prev_back_ref_hash == prev["a"].back_reference_hash()
        assert ecblock.prev_header_hash == prev["e"].header_hash()
        assert ecblock.prev_full_hash == prev["e"].full_hash()
        assert fblock.prev_key_mr == prev["f"].key_mr()
        assert fblock.prev_ledger_key_mr == prev["f"].ledger_key_mr()
        # the leader signs the previous directory block's header (docs/formats.md §5.3, §5.5)
        (sig,) = ablock.db_signatures()
        assert verify_signature(sig.public_key, prev["d"].header(), sig.signature)

    check_ec_markers(ecblock, genesis=prev is None)
    check_coin_block(fblock, dblock)
    for chain_hex, keymr_hex in pairs[3:]:
        await check_entry_block(node, bytes.fromhex(chain_hex), keymr_hex, height)
    await check_lookup_keys(node, dblock, ablock, ecblock, fblock)
    return {"d": dblock, "a": ablock, "e": ecblock, "f": fblock}


def check_ec_markers(ecblock: EntryCreditBlock, *, genesis: bool) -> None:
    objects = list(ecblock.objects)
    if genesis:
        assert objects[0] == ServerIndexNumber(0)
        objects = objects[1:]
    minutes = [o.minute for o in objects if isinstance(o, MinuteNumber)]
    assert minutes == list(range(1, 11))
    assert isinstance(objects[-1], MinuteNumber)
    assert all(isinstance(o, MinuteNumber | CommitEntry | CommitChain) for o in objects)


def check_coin_block(fblock: FactoidBlock, dblock: DirectoryBlock) -> None:
    coinbase, *others = fblock.transactions
    assert not coinbase.inputs and coinbase.timestamp_ms // 60_000 == dblock.timestamp_min
    assert all(tx.inputs for tx in others)
    assert len(fblock.minute_ends) == 10 and fblock.minute_ends[0] >= 1


async def check_entry_block(
    node: NodeHarness, chain_id: bytes, keymr_hex: str, height: int
) -> None:
    raw = bytes.fromhex((await node.call("raw-data", {"hash": keymr_hex}))["data"])
    block = EntryBlock.unmarshal(raw)
    assert block.marshal() == raw and block.key_mr().hex() == keymr_hex
    assert block.chain_id == chain_id and block.height == height
    items = list(block.items)
    assert is_minute_marker(items[-1]) and not is_minute_marker(items[0])
    markers = [i[31] for i in items if is_minute_marker(i)]
    assert markers == sorted(set(markers))  # increasing, never two in a row
    assert all(
        not (is_minute_marker(a) and is_minute_marker(b))
        for a, b in zip(items, items[1:], strict=False)
    )
    if block.sequence == 0:
        assert (block.prev_key_mr, block.prev_full_hash) == (ZERO_HASH, ZERO_HASH)
    else:
        prev_raw = bytes.fromhex(
            (await node.call("raw-data", {"hash": block.prev_key_mr.hex()}))["data"]
        )
        prev = EntryBlock.unmarshal(prev_raw)
        assert prev.full_hash() == block.prev_full_hash
        assert prev.sequence == block.sequence - 1 and prev.height < height
    by_full = await node.call("entry-block", {"keymr": block.full_hash().hex()})
    assert by_full == await node.call("entry-block", {"keymr": keymr_hex})


async def check_lookup_keys(
    node: NodeHarness, d: DirectoryBlock, a: AdminBlock, e: EntryCreditBlock, f: FactoidBlock
) -> None:
    """Every block is found by its primary and its secondary key (docs/formats.md §9.3)."""
    for method, keys, result_key in (
        ("admin-block", (a.lookup_hash(), a.back_reference_hash()), "ablock"),
        ("entrycredit-block", (e.header_hash(), e.full_hash()), "ecblock"),
        ("coin-block", (f.key_mr(), f.ledger_key_mr()), "fblock"),
        ("factoid-block", (f.key_mr(), f.ledger_key_mr()), "fblock"),
    ):
        results = [await node.call(method, {"keymr": k.hex()}) for k in keys]
        assert results[0] == results[1] and result_key in results[0]
    for key in (d.key_mr(), d.full_hash()):
        got = await node.call("directory-block", {"keymr": key.hex()})
        assert got["header"]["sequencenumber"] == d.height
        assert got["header"]["prevblockkeymr"] == d.prev_key_mr.hex()
        raw = await node.call("raw-data", {"hash": key.hex()})
        assert bytes.fromhex(raw["data"]) == d.marshal()


async def test_blocks_round_trip_and_link_across_many_heights(node: NodeHarness) -> None:
    chains = [await node.publish_chain([b"blocks", bytes([i])], b"first") for i in range(3)]
    await submit(node, coin_tx(node, 10**8))
    for height in range(1, 14):
        for minute in range(10):
            if (height + minute) % 3 == 0:
                chain = chains[(height * minute) % 3]
                await node.publish_entry(chain.chain_id, b"h%d m%d" % (height, minute))
            if (height * 7 + minute) % 11 == 0:
                await submit(node, coin_tx(node, 1000 + height, ec=minute % 2 == 0))
            assert await node.next_minute() == (1 if minute == 9 else 0)
    assert (await node.call("heights"))["directoryblockheight"] == 13
    prev = None
    for height in range(0, 14):
        prev = await check_height(node, height, prev)
    head = await node.call("directory-block-head")
    assert head["keymr"] == prev["d"].key_mr().hex()


async def test_minute_markers_follow_the_minute_of_acceptance(node: NodeHarness) -> None:
    chain = await node.publish_chain([b"markers"])  # minute 0
    await node.next_minute()
    await node.next_minute()
    tx = coin_tx(node, 5000)
    await submit(node, tx)  # minute 2
    await node.next_minute()
    late = await node.publish_entry(chain.chain_id, b"minute 3")
    await node.next_block()

    dblock = DirectoryBlock.unmarshal(
        bytes.fromhex((await node.call("dblock-by-height", {"height": 1}))["rawdata"])
    )
    eb_key = dblock.entry_for_chain(chain.chain_id)
    assert eb_key is not None
    raw = bytes.fromhex((await node.call("raw-data", {"hash": eb_key.key_mr.hex()}))["data"])
    items = EntryBlock.unmarshal(raw).items
    assert items == (chain.hash(), minute_marker(1), late.hash(), minute_marker(4))

    ec_raw = bytes.fromhex((await node.call("ecblock-by-height", {"height": 1}))["rawdata"])
    objects = EntryCreditBlock.unmarshal(ec_raw).objects
    kinds = ["c" if isinstance(o, CommitChain | CommitEntry) else o.minute for o in objects]
    assert kinds == ["c", 1, 2, 3, "c", 4, 5, 6, 7, 8, 9, 10]

    f_raw = bytes.fromhex((await node.call("fblock-by-height", {"height": 1}))["rawdata"])
    fblock = FactoidBlock.unmarshal(f_raw)
    assert [t.txid() for t in fblock.transactions][1:] == [tx.txid()]
    assert fblock.minute_ends == (1, 1, 2, 2, 2, 2, 2, 2, 2, 2)  # coinbase, then tx in minute 2

    entry_block = await node.call("entry-block", {"keymr": eb_key.key_mr.hex()})
    ts = dblock.timestamp_s
    assert [e["timestamp"] for e in entry_block["entrylist"]] == [ts + 60, ts + 240]


async def test_genesis_blocks(node: NodeHarness) -> None:
    _e, e_raw = await raw_of(node, "ecblock-by-height", 0)
    objects = EntryCreditBlock.unmarshal(e_raw).objects
    assert objects == (ServerIndexNumber(0), *(MinuteNumber(m) for m in range(1, 11)))
    _f, f_raw = await raw_of(node, "fblock-by-height", 0)
    fblock = FactoidBlock.unmarshal(f_raw)
    coinbase, purchase = fblock.transactions
    assert coinbase.outputs == (TxAddress(devnet.DEV_GENESIS_COINS, DEV_RCD),)
    assert purchase.ec_outputs[0].address == public_key_from_ec_address(devnet.DEV_EC_ADDRESS)
    balance = await node.call("entry-credit-balance", {"address": devnet.DEV_EC_ADDRESS})
    assert balance["balance"] == devnet.DEV_GENESIS_CREDITS
    _a, a_raw = await raw_of(node, "ablock-by-height", 0)
    assert AdminBlock.unmarshal(a_raw).entries == ()
