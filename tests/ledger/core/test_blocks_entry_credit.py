"""Entry credit blocks (docs/formats.md §5.6, §5.8)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.core.blocks.entry_credit import (
    BalanceIncrease,
    EntryCreditBlock,
    MinuteNumber,
    ServerIndexNumber,
)
from ledger.core.commit import CommitChain, CommitEntry
from ledger.core.errors import DecodeError
from ledger.core.transaction import Transaction
from tests.ledger.core.test_transaction import EC_PURCHASE_HEX

Z = bytes(32)
GENESIS_HEADER_HASH = "f87cfc073df0e82cdc2ed0bb992d7ea956fd32b435b099fc35f4b0696948507a"
GENESIS_FULL_HASH = "66fb49a15b68a2a0ce2382e6aa6970c835497c6074bec9794ccf84bb331ad135"

# factomd common/entryCreditBlock/ecblock_test.go TestStaticECBlockUnmarshal t1 (237 bytes).
ECBLOCK_1_RAW = (
    "000000000000000000000000000000000000000000000000000000000000000cbb3ff38bbb90032de6965587f46d"
    "cf37551ac26e15819303057c88999b2910b4f87cfc073df0e82cdc2ed0bb992d7ea956fd32b435b099fc35f4b069"
    "6948507a66fb49a15b68a2a0ce2382e6aa6970c835497c6074bec9794ccf84bb331ad1350000000100000000000000"
    "000b0000000000000058000001020103010401050106010701080417ef7a21d1a616d65e6b73f3c6a7ad5c49340a6c"
    "2592872020ec60767ff00d7dc3d09d10693eb867e2bd0a503746df370403c9451ae91a363046f2a68529c2fd00822c"
    "0109010a"
)
# Section 2.5 commits (factomd commitChain_test.go / commitEntry_test.go).
COMMIT_CHAIN_HEX = (
    "000155ba3b3b3ae027e70117c916df3525ef18f602a7f2faf6c797029b5b2e608666c0d23f78b7ba54c4f60eb630"
    "3ab967c7a1e56ec2431d42cd1b373dc40884979e8c0aa21b0938d6fa3bfee0b0e21de90585092a99ac6b903d3614"
    "91fffc7ede7336300049f30b3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da2927f1"
    "388aa1c9ab6a52d7689665010cff815c422d4a2a613ebc826f272f4a2a3ff9020e51e615a9ebce9dce99e36d30a7"
    "fbbe67855508e60a2233a39eef832204"
)
COMMIT_ENTRY_HEX = (
    "0001538b7fe6fd249f6eed5336f91eb6b506b1f4683c0e03aa8d8c59cf54299b945d41a73b44e90117ef7a21d1a6"
    "16d65e6b73f3c6a7ad5c49340a6c2592872020ec60767ff00d7dc38e2fc16991f2705244c83cc36e5b4ca796dbbf"
    "168601b55d6fc34187a8de061b096f3266f3f6dd986e3f2150a1b14ada29cc9c0fc3a1d1a1875f11dc6cfd0b"
)


def _genesis() -> EntryCreditBlock:
    minutes = tuple(MinuteNumber(m) for m in range(1, 11))
    return EntryCreditBlock.build(prev=None, objects=(ServerIndexNumber(0), *minutes))


def test_mainnet_genesis_ecblock_from_its_contents() -> None:
    block = _genesis()
    assert block.header_hash().hex() == GENESIS_HEADER_HASH
    assert block.full_hash().hex() == GENESIS_FULL_HASH
    assert EntryCreditBlock.unmarshal(block.marshal()) == block


def test_empty_ecblock_header_hash_matches_factomd() -> None:
    """The empty ECBlock used in factomd directoryBlock_test.go TestBuildBlock."""
    block = EntryCreditBlock(0, Z, Z)
    assert block.header_hash().hex() == (
        "a566023a9d7b824e4a12121ee38bc4d3c4987988f04eb8cfecc63570936d7c56"
    )


def test_ecblock_1_vector_with_a_balance_increase() -> None:
    raw = bytes.fromhex(ECBLOCK_1_RAW)
    block = EntryCreditBlock.unmarshal(raw)
    assert len(raw) == 237
    assert block.header_hash().hex() == (
        "c96a851d95db6d58cbcfdd63a8aaf93fc180fb8c003af5508667cc44fa31457d"
    )
    assert block.full_hash().hex() == (
        "1eb3121d81cd8676f20c5fec2f4e0d7a892a2ab2f086506bf55735756098d9ba"
    )
    assert block.marshal() == raw
    assert (block.prev_header_hash.hex(), block.prev_full_hash.hex()) == (
        GENESIS_HEADER_HASH,
        GENESIS_FULL_HASH,
    )
    (increase,) = [o for o in block.objects if isinstance(o, BalanceIncrease)]
    purchase = Transaction.unmarshal(bytes.fromhex(EC_PURCHASE_HEX))
    assert increase.txid == purchase.full_hash()  # M1 records the full hash, not the TxID
    assert increase.ec_public_key == purchase.ec_outputs[0].address
    assert (increase.index, increase.num_ec) == (0, 300)


def test_commits_round_trip_inside_a_block() -> None:
    chain = CommitChain.unmarshal(bytes.fromhex(COMMIT_CHAIN_HEX))
    entry = CommitEntry.unmarshal(bytes.fromhex(COMMIT_ENTRY_HEX))
    block = EntryCreditBlock.build(
        prev=_genesis(), objects=(chain, MinuteNumber(1), entry, MinuteNumber(2))
    )
    raw = block.marshal()
    assert raw[-(2 + 137 + 2 + 201) :][:1] == b"\x02"  # ECID of the chain commit
    again = EntryCreditBlock.unmarshal(raw)
    assert again == block
    assert again.prev_header_hash.hex() == GENESIS_HEADER_HASH
    chain.verify()
    entry.verify()


def test_json_shape() -> None:
    chain = CommitChain.unmarshal(bytes.fromhex(COMMIT_CHAIN_HEX))
    entry = CommitEntry.unmarshal(bytes.fromhex(COMMIT_ENTRY_HEX))
    block = EntryCreditBlock(
        2,
        Z,
        Z,
        (ServerIndexNumber(0), chain, entry, MinuteNumber(1), BalanceIncrease(Z, Z, 0, 300)),
    )
    body = block.to_json()
    assert body["headerhash"] == block.header_hash().hex()
    assert body["fullhash"] == block.full_hash().hex()
    assert body["header"] == {
        "bodyhash": block.body_hash().hex(),
        "prevheaderhash": "00" * 32,
        "prevfullhash": "00" * 32,
        "dbheight": 2,
        "headerexpansionarea": "",
        "objectcount": 5,
        "bodysize": len(block.body()),
        "chainid": "0" * 63 + "c",
        "ecchainid": "0" * 63 + "c",
    }
    entries = body["body"]["entries"]
    assert entries[0] == {"serverindexnumber": 0}
    assert entries[1] == {
        "version": 0,
        "millitime": "0155ba3b3b3a",
        "chainidhash": chain.chain_id_hash.hex(),
        "weld": chain.weld.hex(),
        "entryhash": chain.entry_hash.hex(),
        "credits": 11,
        "ecpubkey": chain.ec_public_key.hex(),
        "sig": chain.signature.hex(),
    }
    assert entries[2]["entryhash"] == entry.entry_hash.hex() and "weld" not in entries[2]
    assert entries[3] == {"number": 1}
    assert entries[4] == {"ecpubkey": "00" * 32, "txid": "00" * 32, "index": 0, "numec": 300}


def test_unmarshal_rejects_malformed_blocks() -> None:
    raw = bytes.fromhex(ECBLOCK_1_RAW)
    tampered = bytearray(raw)
    tampered[40] ^= 1  # stored BodyHash
    with pytest.raises(DecodeError, match="BodyHash"):
        EntryCreditBlock.unmarshal(bytes(tampered))
    with pytest.raises(DecodeError):
        EntryCreditBlock.unmarshal(raw + b"\x00")
    with pytest.raises(DecodeError):
        EntryCreditBlock.unmarshal(raw[:-1])
    unknown = bytearray(_genesis().marshal())
    unknown[-2] = 0x07  # ECID 7 does not exist
    with pytest.raises(DecodeError):
        EntryCreditBlock.unmarshal(bytes(unknown))
    with pytest.raises(DecodeError):
        EntryCreditBlock.unmarshal(bytes(31) + b"\x0a" + raw[32:])


hashes = st.binary(min_size=32, max_size=32)
_chain = CommitChain.unmarshal(bytes.fromhex(COMMIT_CHAIN_HEX))
_entry = CommitEntry.unmarshal(bytes.fromhex(COMMIT_ENTRY_HEX))
ec_objects = st.one_of(
    st.builds(ServerIndexNumber, st.integers(0, 255)),
    st.builds(MinuteNumber, st.integers(0, 255)),
    st.builds(
        BalanceIncrease, hashes, hashes, st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1)
    ),
    st.sampled_from([_chain, _entry]),
)
ecblocks = st.builds(
    EntryCreditBlock,
    st.integers(0, 2**32 - 1),
    hashes,
    hashes,
    st.lists(ec_objects, max_size=6).map(tuple),
    st.binary(max_size=8),
)


@given(ecblocks)
def test_round_trip(block: EntryCreditBlock) -> None:
    assert EntryCreditBlock.unmarshal(block.marshal()) == block
