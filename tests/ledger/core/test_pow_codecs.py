"""Proof-of-work chain codecs: byte-exact with Bitcoin, strict parsing, Merkle paths."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.core.errors import DecodeError, LimitError, MerkleProofError
from ledger.core.hashing import sha256
from ledger.core.pow.encoding import (
    decode_compact_size,
    encode_compact_size,
    from_display_hex,
    to_display_hex,
)
from ledger.core.pow.header import (
    BlockHeader,
    bits_to_target,
    difficulty_target,
    target_to_bits,
)
from ledger.core.pow.merkle import merkle_path, merkle_root, root_from_path
from ledger.core.pow.tx import (
    PowTransaction,
    TxIn,
    TxOut,
    anchor_transaction,
    coinbase_transaction,
    op_return_data,
    op_return_script,
)

# Bitcoin's genesis block (mainnet): its coinbase transaction and header.
GENESIS_TX = bytes.fromhex(
    "01000000010000000000000000000000000000000000000000000000000000000000000000ffffffff4d04ff"
    "ff001d0104455468652054696d65732030332f4a616e2f32303039204368616e63656c6c6f72206f6e20627269"
    "6e6b206f66207365636f6e64206261696c6f757420666f722062616e6b73ffffffff0100f2052a0100000043"
    "4104678afdb0fe5548271967f1a67130b7105cd6a828e03909a67962e0ea1f61deb649f6bc3f4cef38c4f355"
    "04e51ec112de5c384df7ba0b8d578a4c702b6bf11d5fac00000000"
)
GENESIS_TXID = "4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b"
GENESIS_HASH = "000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f"
# Bitcoin block 100000: four txids and the Merkle root in its header.
BLOCK_100000_TXIDS = [
    "8c14f0db3df150123e6f3dbbf30f8b955a8249b62ac1d1ff16284aefa3d06d87",
    "fff2525b8931402dd09222c50775608f75787bd2b87e56995a7bdd30f79702c4",
    "6359f0868171b1d194cbee1af2f16ea598ae8fad666d9b012c8ed2b79a236ec4",
    "e9a66845e05d5abc0ad04ec80f774a7e585c6e8db975962d069a522137b80c1d",
]
BLOCK_100000_ROOT = "f3e94742aca4b5ef85488dc37c06c3282295ffec960994b2c0d5ac2a25a95766"


def test_bitcoin_genesis_transaction_and_header_are_byte_exact() -> None:
    tx = PowTransaction.unmarshal(GENESIS_TX)
    assert tx.marshal() == GENESIS_TX
    assert to_display_hex(tx.txid()) == GENESIS_TXID
    header = BlockHeader(1, bytes(32), tx.txid(), 1231006505, 0x1D00FFFF, 2083236893)
    assert to_display_hex(header.hash()) == GENESIS_HASH
    assert header.meets_target()
    assert BlockHeader.unmarshal(header.marshal()) == header
    assert not BlockHeader(1, bytes(32), tx.txid(), 1231006505, 0x1D00FFFF, 1).meets_target()


def test_bitcoin_block_100000_merkle_root_and_every_path() -> None:
    txids = [from_display_hex(t) for t in BLOCK_100000_TXIDS]
    root = merkle_root(txids)
    assert to_display_hex(root) == BLOCK_100000_ROOT
    for i, txid in enumerate(txids):
        assert root_from_path(txid, i, merkle_path(txids, i)) == root


@given(st.integers(min_value=1, max_value=40), st.data())
def test_every_path_of_every_tree_size_leads_to_the_root(size: int, data: st.DataObject) -> None:
    txids = [sha256(b"%d" % i) for i in range(size)]
    index = data.draw(st.integers(min_value=0, max_value=size - 1))
    path = merkle_path(txids, index)
    assert root_from_path(txids[index], index, path) == merkle_root(txids)
    if path and index ^ 1 < size:
        assert root_from_path(txids[index], index ^ 1, path) != merkle_root(txids)
    elif path:  # the twin of an odd level's last transaction: only the duplicate is there
        with pytest.raises(MerkleProofError, match="duplicated last node"):
            root_from_path(txids[index], index ^ 1, path)


def test_root_from_path_refuses_index_bits_beyond_the_path() -> None:
    txids = [sha256(b"%d" % i) for i in range(4)]
    path = merkle_path(txids, 1)
    with pytest.raises(MerkleProofError):
        root_from_path(txids[1], 1 + 4, path)
    with pytest.raises(MerkleProofError):
        root_from_path(txids[1], 1, [*path[:-1], path[-1] + b"\x00"])


def test_compact_bits_round_trip_and_invalid_bits() -> None:
    for bits in (0x1D00FFFF, 0x1B0404CB, 0x207FFFFF, 0x1F00FFFF):
        assert target_to_bits(bits_to_target(bits)) == bits
    assert bits_to_target(0x1D00FFFF) == 0xFFFF << 208
    for bad in (0x1D80FFFF, 0x00000000, 0xFF7FFFFF, -1, 1 << 32):
        with pytest.raises(LimitError):
            bits_to_target(bad)
    assert difficulty_target(16) <= (1 << 240) - 1
    assert difficulty_target(8) > difficulty_target(16)


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_compact_size_round_trip(value: int) -> None:
    encoded = encode_compact_size(value)
    assert decode_compact_size(encoded) == (value, len(encoded))


def test_compact_size_must_be_shortest() -> None:
    with pytest.raises(DecodeError):
        decode_compact_size(b"\xfd\x10\x00")
    with pytest.raises(DecodeError):
        decode_compact_size(b"\xfe\xff\xff\x00\x00")
    with pytest.raises(DecodeError):
        decode_compact_size(b"\xfd\x10")


scripts = st.binary(max_size=120)
tx_strategy = st.builds(
    PowTransaction,
    st.integers(min_value=0, max_value=2**32 - 1),
    st.lists(
        st.builds(
            TxIn,
            st.binary(min_size=32, max_size=32),
            st.integers(min_value=0, max_value=2**32 - 1),
            scripts,
            st.integers(min_value=0, max_value=2**32 - 1),
        ),
        min_size=1,
        max_size=3,
    ).map(tuple),
    st.lists(
        st.builds(TxOut, st.integers(min_value=0, max_value=2**64 - 1), scripts), max_size=3
    ).map(tuple),
    st.integers(min_value=0, max_value=2**32 - 1),
)


@given(tx_strategy)
def test_transaction_round_trip(tx: PowTransaction) -> None:
    raw = tx.marshal()
    assert PowTransaction.unmarshal(raw) == tx
    with pytest.raises(DecodeError):
        PowTransaction.unmarshal(raw + b"\x00")
    with pytest.raises(DecodeError):
        PowTransaction.unmarshal(raw[:-1])


def test_segwit_marker_is_refused() -> None:
    with pytest.raises(DecodeError):
        PowTransaction.unmarshal(bytes.fromhex("01000000") + b"\x00\x01" + GENESIS_TX[4:])


def test_op_return_scripts() -> None:
    data = b"Fa" + bytes(38)
    script = op_return_script(data)
    assert script[:2] == b"\x6a\x28"
    assert op_return_data(script) == data
    assert op_return_data(op_return_script(bytes(100))) == bytes(100)
    assert op_return_data(b"\x6a\x28" + bytes(39)) is None
    assert op_return_data(b"\x51") is None
    tx = anchor_transaction([script])
    assert tx.op_return_payloads() == [data]
    assert anchor_transaction([script]).txid() == tx.txid()
    assert coinbase_transaction(1).txid() != coinbase_transaction(2).txid()


def test_display_hex() -> None:
    raw = bytes(range(32))
    assert from_display_hex(to_display_hex(raw)) == raw
    assert from_display_hex("0x" + to_display_hex(raw)) == raw
    with pytest.raises(DecodeError):
        from_display_hex("ab")
    with pytest.raises(DecodeError):
        BlockHeader.unmarshal(bytes(81))
