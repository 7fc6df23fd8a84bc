"""Coin (factoid) blocks (docs/formats.md §5.7, §5.8)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.core.blocks.coin import FactoidBlock
from ledger.core.errors import DecodeError, LedgerFormatError
from ledger.core.hashing import sha256
from ledger.core.merkle import merkle_root
from ledger.core.transaction import Transaction
from tests.ledger.core.test_transaction import COINBASE_HEX, EC_PURCHASE_HEX, transactions

Z = bytes(32)
GENESIS_KEYMR = "a164ccbb77a21904edc4f2bb753aa60635fb2b60279c06ae01aa211f37541736"
GENESIS_LEDGER_KEYMR = "2fb170f73c3961d4218ff806dd75e6e348ca1798a5fc7a99d443fbe2ff939d99"

# factomd common/factoid/fblock_test.go TestMarshalUnmarshal (mainnet FBlock 1).
FBLOCK_1_RAW = (
    "000000000000000000000000000000000000000000000000000000000000000f16a82932aa64e6ad45b2749f2abb87"
    "1fcf3353ab9d4e163c9bd90e5bbd745b59" + GENESIS_KEYMR + GENESIS_LEDGER_KEYMR + "00000000000a2be8"
    "00000001" + "00" + "00000002" + "000000c7" + COINBASE_HEX + EC_PURCHASE_HEX + "00" * 10
)


def test_mainnet_fblock_1_vector() -> None:
    raw = bytes.fromhex(FBLOCK_1_RAW)
    block = FactoidBlock.unmarshal(raw)
    assert (
        block.key_mr().hex() == "aa100f203f159e4369081bb366f6816b302387ec19a4f8b9c98495d97fbe3527"
    )
    assert block.ledger_key_mr().hex() == (
        "5810ed83155dfb7b6039323b8a5572cd03166a37d1c3e86d4538c99907a81757"
    )
    assert block.ledger_mr().hex() == (
        "c9935c01b47250da7be21f9838a45a797b5c1c2c8b12a347bcc7188c4ae9e0e8"
    )
    assert (
        block.body_mr().hex() == "16a82932aa64e6ad45b2749f2abb871fcf3353ab9d4e163c9bd90e5bbd745b59"
    )
    assert (block.height, block.exchange_rate) == (1, 666600)
    assert block.minute_ends == (2,) * 10
    assert block.marshal() == raw
    for tx in block.transactions:
        tx.verify_signatures()


def test_empty_fblock_key_mr_matches_factomd() -> None:
    """``new(factoid.FBlock)`` in factomd directoryBlock_test.go TestBuildBlock."""
    block = FactoidBlock(0, 0, Z, Z, (), (0,) * 10)
    assert (
        block.key_mr().hex() == "c9ab808e3d1d5eb2b7d3fa946dca27c2d250d782dab05a729fe99e9aaf656330"
    )
    assert block.body() == bytes(10)


def test_body_mr_leaves_follow_body_order() -> None:
    coinbase = Transaction.unmarshal(bytes.fromhex(COINBASE_HEX))
    purchase = Transaction.unmarshal(bytes.fromhex(EC_PURCHASE_HEX))
    minutes = [[coinbase], [], [purchase]] + [[]] * 7
    block = FactoidBlock.build(prev=None, exchange_rate=1000, minutes=minutes)
    marker = sha256(b"\x00")
    leaves = [coinbase.full_hash(), marker, marker, purchase.full_hash()] + [marker] * 8
    assert block.body_mr() == merkle_root(leaves)
    ledger = [coinbase.txid(), marker, marker, purchase.txid()] + [marker] * 8
    assert block.ledger_mr() == merkle_root(ledger)
    assert block.minute_ends == (1, 1, 2, 2, 2, 2, 2, 2, 2, 2)
    assert block.body() == coinbase.marshal() + bytes(2) + purchase.marshal() + bytes(8)
    assert FactoidBlock.unmarshal(block.marshal()) == block


def test_build_links_to_prev() -> None:
    genesis = FactoidBlock.build(
        prev=None,
        exchange_rate=666600,
        minutes=[[Transaction.unmarshal(bytes.fromhex(COINBASE_HEX))]] + [[]] * 9,
    )
    nxt = FactoidBlock.build(
        prev=genesis, exchange_rate=666600, minutes=[[Transaction(1)]] + [[]] * 9
    )
    assert nxt.height == 1
    assert nxt.prev_key_mr == genesis.key_mr()
    assert nxt.prev_ledger_key_mr == genesis.ledger_key_mr()


@pytest.mark.parametrize(
    "minutes", [[[Transaction(1)]] * 9, [[]] * 10, [[], [Transaction(1)]] + [[]] * 8]
)
def test_build_rejects_wrong_minute_groups(minutes: list[list[Transaction]]) -> None:
    with pytest.raises(LedgerFormatError):
        FactoidBlock.build(prev=None, exchange_rate=1, minutes=minutes)


@pytest.mark.parametrize(
    "ends",
    [(1,) * 9, (0,) + (1,) * 9, (1, 0) + (1,) * 8, (1,) * 9 + (2,)],
)
def test_construction_rejects_bad_minute_ends(ends: tuple[int, ...]) -> None:
    with pytest.raises(LedgerFormatError):
        FactoidBlock(0, 1, Z, Z, (Transaction(1),), ends)


def test_json_shape() -> None:
    block = FactoidBlock.unmarshal(bytes.fromhex(FBLOCK_1_RAW))
    body = block.to_json()
    assert body["keymr"] == block.key_mr().hex()
    assert body["ledgerkeymr"] == block.ledger_key_mr().hex()
    assert body["chainid"] == "0" * 63 + "f"
    assert body["prevkeymr"] == GENESIS_KEYMR
    assert body["prevledgerkeymr"] == GENESIS_LEDGER_KEYMR
    assert (
        body["exchrate"] == 666600 and body["dbheight"] == 1 and body["bodymr"].startswith("16a8")
    )
    assert [t["blockheight"] for t in body["transactions"]] == [1, 1]
    assert body["transactions"][1]["txid"] == (
        "f1d9919829fa71ce18caf1bd8659cce8a06c0026d3f3fffc61054ebb25ebeaa0"
    )


def _with_body(body: bytes, tx_count: int) -> bytes:
    header = bytes.fromhex(FBLOCK_1_RAW)[: 32 * 4 + 8 + 4 + 1]
    return header + tx_count.to_bytes(4, "big") + len(body).to_bytes(4, "big") + body


def test_unmarshal_rejects_malformed_blocks() -> None:
    raw = bytes.fromhex(FBLOCK_1_RAW)
    with pytest.raises(DecodeError):
        FactoidBlock.unmarshal(raw + b"\x00")
    with pytest.raises(DecodeError):
        FactoidBlock.unmarshal(raw[:-1])
    tampered = bytearray(raw)
    tampered[40] ^= 1
    with pytest.raises(DecodeError, match="BodyMR"):
        FactoidBlock.unmarshal(bytes(tampered))
    body = bytes.fromhex(COINBASE_HEX + EC_PURCHASE_HEX)
    with pytest.raises(DecodeError, match="11 minute markers|more than 10"):
        FactoidBlock.unmarshal(_with_body(body + bytes(11), 2))
    with pytest.raises(DecodeError, match="9 minute markers"):
        FactoidBlock.unmarshal(_with_body(body + bytes(9), 2))
    with pytest.raises(DecodeError, match="TxCount"):
        FactoidBlock.unmarshal(_with_body(body + bytes(10), 3))
    with pytest.raises(DecodeError, match="coinbase"):
        FactoidBlock.unmarshal(_with_body(b"\x00" + body + bytes(9), 2))
    expansion = bytearray(raw)
    expansion[32 * 4 + 12] = 1
    with pytest.raises(DecodeError, match="expansion"):
        FactoidBlock.unmarshal(bytes(expansion))


@st.composite
def fblocks(draw: st.DrawFn) -> FactoidBlock:
    groups = [draw(st.lists(transactions(), max_size=2)) for _ in range(10)]
    groups[0] = [draw(transactions()), *groups[0]]
    return FactoidBlock.build(
        prev=None, exchange_rate=draw(st.integers(0, 2**64 - 1)), minutes=groups
    )


@settings(max_examples=50)
@given(fblocks())
def test_round_trip(block: FactoidBlock) -> None:
    assert FactoidBlock.unmarshal(block.marshal()) == block
