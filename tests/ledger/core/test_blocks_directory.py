"""Directory blocks (docs/formats.md §5.2, §5.3, §5.8)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.core.blocks.directory import (
    ADMIN_CHAIN_ID,
    COIN_CHAIN_ID,
    EC_CHAIN_ID,
    MAIN_NETWORK_ID,
    DBlockEntry,
    DirectoryBlock,
)
from ledger.core.errors import DecodeError, LedgerFormatError
from ledger.core.merkle import merkle_root

Z = bytes(32)
GENESIS_ABLOCK_LOOKUP = "4fb409d5369fad6aa7768dc620f11cd219f9b885956b631ad050962ca934052e"
GENESIS_EC_HEADER_HASH = "f87cfc073df0e82cdc2ed0bb992d7ea956fd32b435b099fc35f4b0696948507a"
GENESIS_FBLOCK_KEYMR = "a164ccbb77a21904edc4f2bb753aa60635fb2b60279c06ae01aa211f37541736"
GENESIS_RAW = (
    "00fa92e5a24d0789d16890ec1f96f617d8c802a40ee876d761b076da330d784356ac80f9ab"
    + "00" * 64
    + "016e8010"
    + "00000000"
    + "00000003"
    + ADMIN_CHAIN_ID.hex()
    + GENESIS_ABLOCK_LOOKUP
    + EC_CHAIN_ID.hex()
    + GENESIS_EC_HEADER_HASH
    + COIN_CHAIN_ID.hex()
    + GENESIS_FBLOCK_KEYMR
)

# Mainnet DBlocks 1000 and 1001 (factomd common/directoryBlock/directoryBlock_test.go TestSameAs).
DBLOCK_1000_RAW = (
    "00fa92e5a2f2eaf170a2da9e4956a40231ed7255c6c6e5ada1ed746fc5ab3a0b79b8c700367a49467be900ba00"
    "daedd7d9cf2b1a07f839360e859e1f3d78c46701d3ad1507974595bf9b73dbec9ff5d5744cbf6410d66b837924"
    "208a0b8b84e54fc4aad660016ea716000003e8000000040000000000000000000000000000000000000000000000"
    "00000000000000000a3d92dc70f4cfd4fe464e18962057d71924679cc866fe37f4b8023d292d9f34ce0000000000"
    "00000000000000000000000000000000000000000000000000000c0526c1fdb9e0813e297a331891815ed893cb5a"
    "9cff15529197f13932ed9f9547000000000000000000000000000000000000000000000000000000000000000f52"
    "6aca5f63bfb59188bae1fc367411a123bcc1d5a3c23c710b66b46703542855df3ade9eec4b08d5379cc64270c30e"
    "a7315d8a8a1a69efe2b98a60ecdd69e604f08c42bc44c09ac26c349bef8ee80d2ffb018cfa3e769107b2413792fa"
    "9bd642"
)
DBLOCK_1000_KEYMR = (
    "cd45e38f53c090a03513f0c67afb93c774a064a5614a772cd079f31b3db4d011"  # = checkpoint
)
DBLOCK_1001_RAW = (
    "00fa92e5a21b06a03dcc94ab7d6d991bfc9937cf72c744095f46316ef2281f9f20d3738c03cd45e38f53c090a0"
    "3513f0c67afb93c774a064a5614a772cd079f31b3db4d01106e8d2d429fe728c4a90a3b6fbd910eb97e543c460c7"
    "62a72d1563302bb401b1016ea720000003e9000000040000000000000000000000000000000000000000000000"
    "00000000000000000abfd0f8ab0ea25a16d68c0533401eaea53cb84b9b597f2ad85006120836ac17880000000000"
    "00000000000000000000000000000000000000000000000000000c9495cc2988fb7d598cec0c91ea00447e9f2e6b"
    "0f5cd3b808e50eb7010cae4202000000000000000000000000000000000000000000000000000000000000000f1f"
    "67dc478fc7a5f8d9d612e362040a114dd437228c64b11a10df3a3e31d01c45df3ade9eec4b08d5379cc64270c30e"
    "a7315d8a8a1a69efe2b98a60ecdd69e604cbf7179a054e6a40dbbebdb4ac29e5185052889907c8607f35a3aca84e"
    "eb72f6"
)
# factomd TestDBlockTimestamp: version 1, a custom network, timestamp 1242 minutes.
TIMESTAMP_RAW = (
    "010000ffff45acc1e2847302b80d0558aac1504c54253c28293a92bab6c7f8bb984a1e696fcd63b26d12e9d397a"
    "545fd50e26b53ab8b1fb555f824edb1f71937a6288d59014d1b7854253ec712124c9862f3aece068fe8b56b33e5"
    "40dd6e8f7bb30efdb4f7000004da000000080000000500000000000000000000000000000000000000000000000000"
    "0000000000000a44a3b5f89f8f861815930b8442ed143d61163a8d5ad4cc3f792847c6c26e35430000000000000000"
    "00000000000000000000000000000000000000000000000c9d149c5213f91502ad50d9136792974987ad086309bf4d"
    "1462c68fe982284245000000000000000000000000000000000000000000000000000000000000000f1a708e863af2"
    "1b5492563f6440cabfd2932653864f77cf4519cf361b107e4ce86e7e64ac45ff57edbf8537a0c99fba2e9ee351ef3d"
    "3f4abd93af9f01107e592c25c9e5963917c97ed988c571e703104b34d11f2f6241c0c69d9cfd6ad94491dbdf3ade9e"
    "ec4b08d5379cc64270c30ea7315d8a8a1a69efe2b98a60ecdd69e604027710061c785d0ffbf15f2fe4a42a744f78ef"
    "6a0ca39bcf38ed4ead6ab0cded"
)


def _genesis() -> DirectoryBlock:
    return DirectoryBlock.build(
        prev=None,
        network_id=MAIN_NETWORK_ID,
        timestamp_min=24018960,
        admin_lookup_hash=bytes.fromhex(GENESIS_ABLOCK_LOOKUP),
        ec_header_hash=bytes.fromhex(GENESIS_EC_HEADER_HASH),
        fblock_key_mr=bytes.fromhex(GENESIS_FBLOCK_KEYMR),
    )


def test_mainnet_genesis_dblock_from_its_contents() -> None:
    block = _genesis()
    assert block.marshal().hex() == GENESIS_RAW
    assert block.body_mr().hex().startswith("4d0789d1")
    assert (
        block.key_mr().hex() == "64d4352b134280305599363ea388c2a9c3c64dc3ee6e0100893262e372bf064b"
    )
    assert (
        block.full_hash().hex()
        == "cbd3d09db6defdc25dfc7d57f3479b339a077183cd67022e6d1ef6c041522b40"
    )
    assert block.timestamp_s == 24018960 * 60  # 2015-09-01 20:00 UTC
    assert DirectoryBlock.unmarshal(bytes.fromhex(GENESIS_RAW)) == block


def test_mainnet_dblock_1000_matches_the_checkpoint() -> None:
    block = DirectoryBlock.unmarshal(bytes.fromhex(DBLOCK_1000_RAW))
    assert len(bytes.fromhex(DBLOCK_1000_RAW)) == 369
    assert block.height == 1000
    assert block.key_mr().hex() == DBLOCK_1000_KEYMR
    assert block.marshal().hex() == DBLOCK_1000_RAW


def test_dblock_1001_links_to_dblock_1000() -> None:
    d1000 = DirectoryBlock.unmarshal(bytes.fromhex(DBLOCK_1000_RAW))
    d1001 = DirectoryBlock.unmarshal(bytes.fromhex(DBLOCK_1001_RAW))
    assert d1001.height == 1001
    assert d1001.prev_key_mr == d1000.key_mr()
    assert d1001.prev_full_hash == d1000.full_hash()


def test_factomd_timestamp_vector() -> None:
    block = DirectoryBlock.unmarshal(bytes.fromhex(TIMESTAMP_RAW))
    assert block.timestamp_min == 1242
    assert block.version == 1
    assert block.marshal().hex() == TIMESTAMP_RAW


def test_factomd_build_block_vector_and_json() -> None:
    """factomd TestBuildBlock: empty A/EC/F blocks and two entry blocks, network 0, time 0."""
    block = DirectoryBlock.build(
        prev=None,
        network_id=0,
        timestamp_min=0,
        admin_lookup_hash=bytes.fromhex(GENESIS_ABLOCK_LOOKUP),
        ec_header_hash=bytes.fromhex(
            "a566023a9d7b824e4a12121ee38bc4d3c4987988f04eb8cfecc63570936d7c56"
        ),
        fblock_key_mr=bytes.fromhex(
            "c9ab808e3d1d5eb2b7d3fa946dca27c2d250d782dab05a729fe99e9aaf656330"
        ),
        entry_blocks=[
            (
                bytes.fromhex("df3ade9eec4b08d5379cc64270c30ea7315d8a8a1a69efe2b98a60ecdd69e604"),
                bytes.fromhex("b926da5ea5840b34189c37c55db9eb482f6e370bd097a16d6e890bc000c10898"),
            ),
            (
                bytes.fromhex("3e3eb61fb20e71d8211882075d404f5929618a189d23aba8c892b22228aa0d71"),
                bytes.fromhex("9daad42e5efedf3075fa2cf51908babdb568f431a3c13b9a496ffbfb7160ad2e"),
            ),
        ],
    )
    expected = json.loads(
        '{"dbhash":"857d121b40c0763cd310c68963d23ebf6fa4241ef6ba26861d9b80aa71c9f3a9",'
        '"keymr":"eadf05b85c7ad70390c72783a9a3a29ae253f4f7d45d36f176bbc56d56bab9cc",'
        '"header":{"version":0,"networkid":0,'
        '"bodymr":"01004ae2e96c0344a3c30a0704383c5c90ca2663921a9c1b8dc50658d52850a3",'
        '"prevkeymr":"' + "00" * 32 + '","prevfullhash":"' + "00" * 32 + '",'
        '"timestamp":0,"dbheight":0,"blockcount":5,"chainid":"' + "0" * 63 + 'd"},'
        '"dbentries":['
        '{"chainid":"' + "0" * 63 + 'a","keymr":"' + GENESIS_ABLOCK_LOOKUP + '"},'
        '{"chainid":"' + "0" * 63 + 'c",'
        '"keymr":"a566023a9d7b824e4a12121ee38bc4d3c4987988f04eb8cfecc63570936d7c56"},'
        '{"chainid":"' + "0" * 63 + 'f",'
        '"keymr":"c9ab808e3d1d5eb2b7d3fa946dca27c2d250d782dab05a729fe99e9aaf656330"},'
        '{"chainid":"3e3eb61fb20e71d8211882075d404f5929618a189d23aba8c892b22228aa0d71",'
        '"keymr":"9daad42e5efedf3075fa2cf51908babdb568f431a3c13b9a496ffbfb7160ad2e"},'
        '{"chainid":"df3ade9eec4b08d5379cc64270c30ea7315d8a8a1a69efe2b98a60ecdd69e604",'
        '"keymr":"b926da5ea5840b34189c37c55db9eb482f6e370bd097a16d6e890bc000c10898"}]}'
    )
    body = block.to_json()
    assert body.pop("headerhash") == block.header_hash().hex()
    assert body == expected


def test_factomd_key_mr_vector_with_five_entries() -> None:
    """factomd TestKeyMRs: five pairs of chain 00..01 replacing the special entries."""
    key_mrs = [
        "44c9f3a6d6f6b2ab5efb29e7d6159c4e3fca13fc5dd03b94ae3dea8bf30173cb",
        "41a36ab01a9b8e8d78d6b43b8e7e6671916a93b43b8fec48a627d0cb51f012f1",
        "905740850540f1d17fcb1fc7fd0c61a33150b2cdc0f88334f6a891ec34bd1cfc",
        "9c9610e09673c9136508112fe447c8b9c1e042a95bd140ec161ade4995cd0f73",
        "fbc3a4b40464049c999e99feff2bf36996f27869b045a0374bc47b7c2cda9e7c",
    ]
    chain = bytes(31) + b"\x01"
    entries = [DBlockEntry(chain, bytes.fromhex(k)) for k in key_mrs]
    block = DirectoryBlock(0, 0, 0, Z, Z, entries)
    assert (
        block.key_mr().hex() == "1710a017d0aaa29e03cdce767f2442a8519a512769777eb5c93d0167ad788104"
    )


def test_factomd_body_mr_vector_with_six_entries() -> None:
    """factomd TestMerkleTree: zero special blocks plus three entry blocks."""
    specials = [DBlockEntry(c, Z) for c in (ADMIN_CHAIN_ID, EC_CHAIN_ID, COIN_CHAIN_ID)]
    extra = [DBlockEntry(bytes(30) + bytes([n, 0]), bytes(31) + bytes([n << 4])) for n in (1, 2, 3)]
    block = DirectoryBlock(0, 0, 0, Z, Z, [*specials, *extra])
    assert (
        block.body_mr().hex() == "a8caad450c7f721526087bf33d251d5fd537e51885f718e89dd9780cfeee3e66"
    )


def test_lookup_keys_of_every_block_kind() -> None:
    from ledger.core.blocks.admin import AdminBlock
    from ledger.core.blocks.coin import FactoidBlock
    from ledger.core.blocks.entry_block import EntryBlock
    from ledger.core.blocks.entry_credit import EntryCreditBlock

    admin = AdminBlock(0, Z)
    ec = EntryCreditBlock(0, Z, Z)
    coin = FactoidBlock(0, 0, Z, Z, (), (0,) * 10)
    eblock = EntryBlock(Z, 0, 0, Z, Z, (bytes([1]) * 32,))
    dblock = _genesis()
    assert (admin.primary_key(), admin.secondary_key()) == (
        admin.lookup_hash(),
        admin.back_reference_hash(),
    )
    assert (ec.primary_key(), ec.secondary_key()) == (ec.header_hash(), ec.full_hash())
    assert (coin.primary_key(), coin.secondary_key()) == (coin.key_mr(), coin.ledger_key_mr())
    assert (eblock.primary_key(), eblock.secondary_key()) == (eblock.key_mr(), eblock.full_hash())
    assert (dblock.primary_key(), dblock.secondary_key()) == (dblock.key_mr(), dblock.full_hash())


def test_body_mr_equals_root_over_the_flat_branch_leaves() -> None:
    block = DirectoryBlock.unmarshal(bytes.fromhex(DBLOCK_1000_RAW))
    assert block.body_mr() == merkle_root(block.branch_leaves())


def test_build_sorts_entry_blocks_and_links_to_prev() -> None:
    genesis = _genesis()
    chains = [bytes([n]) * 32 for n in (9, 3, 7)]
    nxt = DirectoryBlock.build(
        prev=genesis,
        network_id=MAIN_NETWORK_ID,
        timestamp_min=24018970,
        admin_lookup_hash=Z,
        ec_header_hash=Z,
        fblock_key_mr=Z,
        entry_blocks=[(c, c) for c in chains],
    )
    assert [e.chain_id for e in nxt.entries[3:]] == sorted(chains)
    assert [e.chain_id for e in nxt.entries[:3]] == [ADMIN_CHAIN_ID, EC_CHAIN_ID, COIN_CHAIN_ID]
    assert (nxt.height, nxt.prev_key_mr, nxt.prev_full_hash) == (
        1,
        genesis.key_mr(),
        genesis.full_hash(),
    )


@pytest.mark.parametrize("chain", [bytes([4]) * 32, ADMIN_CHAIN_ID])
def test_build_rejects_duplicate_and_reserved_chains(chain: bytes) -> None:
    pairs = [(chain, Z), (bytes([4]) * 32, Z)] if chain != ADMIN_CHAIN_ID else [(chain, Z)]
    with pytest.raises(LedgerFormatError):
        DirectoryBlock.build(
            prev=None,
            network_id=1,
            timestamp_min=1,
            admin_lookup_hash=Z,
            ec_header_hash=Z,
            fblock_key_mr=Z,
            entry_blocks=pairs,
        )


def test_directory_block_json_by_keymr() -> None:
    block = _genesis()
    assert block.to_directory_block_json() == {
        "header": {"prevblockkeymr": "00" * 32, "sequencenumber": 0, "timestamp": 24018960 * 60},
        "entryblocklist": [e.to_json() for e in block.entries],
    }


def test_unmarshal_rejects_wrong_body_mr_count_and_trailing_bytes() -> None:
    raw = bytearray(bytes.fromhex(GENESIS_RAW))
    raw[10] ^= 1  # inside the stored BodyMR
    with pytest.raises(DecodeError, match="BodyMR"):
        DirectoryBlock.unmarshal(bytes(raw))
    with pytest.raises(DecodeError):
        DirectoryBlock.unmarshal(bytes.fromhex(GENESIS_RAW) + b"\x00")
    with pytest.raises(DecodeError):
        DirectoryBlock.unmarshal(bytes.fromhex(GENESIS_RAW)[:-1])
    bad_count = bytearray(bytes.fromhex(GENESIS_RAW))
    bad_count[111] = 0xFF
    with pytest.raises(DecodeError):
        DirectoryBlock.unmarshal(bytes(bad_count))


hashes = st.binary(min_size=32, max_size=32)
dblocks = st.builds(
    DirectoryBlock,
    st.integers(0, 2**32 - 1),
    st.integers(0, 2**32 - 1),
    st.integers(0, 2**32 - 1),
    hashes,
    hashes,
    st.lists(st.builds(DBlockEntry, hashes, hashes), max_size=8),
    st.integers(0, 255),
)


@given(dblocks)
def test_round_trip(block: DirectoryBlock) -> None:
    raw = block.marshal()
    assert DirectoryBlock.unmarshal(raw) == block
    assert len(block.header()) == 113
