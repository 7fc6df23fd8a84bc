"""Entry blocks (docs/formats.md §5.2, §5.4, §5.8)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.core.blocks.directory import DirectoryBlock
from ledger.core.blocks.entry_block import (
    EntryBlock,
    is_minute_marker,
    minute_marker,
)
from ledger.core.errors import DecodeError, LedgerFormatError
from ledger.core.hashing import sha256d

# factomd common/entryBlock/eblock_test.go newEntryBlock (chain 4bf71c17..., seq 728, height 6920).
EBLOCK_6920_RAW = (
    "4bf71c177e71504032ab84023d8afc16e302de970e6be110dac20adbf9a1974625f25d9375533b44505964af9932"
    "12ef7c13314736b2c76a37c73571d89d8b21c6180f7430677d46d93a3e17b68e6a25dc89ecc092cee14591015788"
    "59f7f6969d171a092a1d04f067d55628b461c6a106b76b4bc860445f87b0052cdc5f2bfd000002d800001b08000000"
    "0272d72e71fdee4984ecb30eedcc89cb171d1f5f02bf9a8f10a8b2cfbaf03efe1c00000000000000000000000000"
    "00000000000000000000000000000000000001"
)
# Anchor-chain EBlock listed by mainnet DBlock 1000 (eblock_test.go TestSameAs).
EBLOCK_ANCHOR_1000_RAW = (
    "df3ade9eec4b08d5379cc64270c30ea7315d8a8a1a69efe2b98a60ecdd69e6041611c693d62887530c5420a48f2e"
    "a2d6038745fc493d6b1e531232805dd2149614ef537df0c73df748b12d508b4334fe8d2832a4cd6ea24f64a33638"
    "39bd0efa46e835bfed10ded0d756d7ccafd44830cc942799fca43f2505e9d024b0a9dd3c00000221000003e80000"
    "0002b24d4ee9e2184673a4d7de6fdac1288ea00b7856940341122c34bd50a662340a00000000000000000000000000"
    "00000000000000000000000000000000000009"
)
# eblock_test.go TestMarshalUnmarshalStaticEBlock: (raw, KeyMR, full hash).
STATIC_EBLOCKS = [
    (
        "06a40590f536293bdecc3d7e69a5c21785c6ed454a59caf7b2e083a1a88ac85b900986feee6603c74fc3aa925d"
        "3de2371190fee36632bd2f1389cbaa6d62a98b78fe8619ef8af7ddae3de88a5063476d04467a576c4ff40abd15"
        "7429e19f1748f43a6d9767a02dbbfbec86fe962552f22c55d4f6467dc8cf019d1d0ba06a88d40000f77b000160"
        "2100000002370054e235209bda68f934c8d4bd9d84edef4c03ebd890fe7686edca138f61880000000000000000"
        "000000000000000000000000000000000000000000000008",
        "1462592f58712147b62617c6fb37380a223cd32ef673345340e94521df3c9aca",
        "52794022b3da85b58df69cb842b85d45cda70771677fe0011f5af852eb30e930",
    ),
    (
        "df3ade9eec4b08d5379cc64270c30ea7315d8a8a1a69efe2b98a60ecdd69e604831da78a07e01a7495719c54a2"
        "3861d7d2c25a3eac0b5bfda7d7715c6937c108e9a64a371c68e89f5a3e97f6512c3864fa73448b1907de9078f5"
        "a9dc0f4b2d0aecfb6f5aee8e04bde68a5b69a4cea55e8b4e7a3a8efbf75d45a6b686874c5bbe0000000d000000"
        "1900000004c480b681b113118876e2540b1f9791af555dc2cd9b5806451305167816281710c92715fe2262b22b"
        "1b6fad0f4fc81ff7ccf5f9d633fb6815db414ec023719a72c49b069dbc664c2f247b812160c4a902826483df2b"
        "47c27dfd2a95c4281dda790000000000000000000000000000000000000000000000000000000000000003",
        "78ac31584a1e526a3739d6eac5129f6a71aefa722792f9afe8b428f34a9f673c",
        "8180cef1efb75d39fb581c44688a43cae6a4ebab70d7abbe9f2d8864e230e75c",
    ),
]


def test_factomd_eblock_vector() -> None:
    block = EntryBlock.unmarshal(bytes.fromhex(EBLOCK_6920_RAW))
    assert (block.sequence, block.height) == (728, 6920)
    assert block.items[-1] == minute_marker(1)
    assert (
        block.key_mr().hex() == "a9fc0b656430d8bf71d180760b0b352c08f45a55a8cf157383613484587b4d21"
    )
    assert (
        block.full_hash().hex()
        == "1ec4c9a52ede96e57f855efc8cb1475e4a449773bad7a5b9a8b9abf4c683a1da"
    )
    assert (
        block.body_mr().hex() == "25f25d9375533b44505964af993212ef7c13314736b2c76a37c73571d89d8b21"
    )
    assert sha256d(block.chain_id).hex() == (
        "ca8c59c692b660b3e10cc94c7bb1dd893752f496effc867d6f04791a3f364bdd"
    )
    assert block.marshal().hex() == EBLOCK_6920_RAW


@pytest.mark.parametrize(("raw", "key_mr", "full_hash"), STATIC_EBLOCKS)
def test_factomd_static_eblocks(raw: str, key_mr: str, full_hash: str) -> None:
    block = EntryBlock.unmarshal(bytes.fromhex(raw))
    assert block.key_mr().hex() == key_mr
    assert block.full_hash().hex() == full_hash
    assert block.marshal().hex() == raw


def test_anchor_eblock_is_listed_by_mainnet_dblock_1000() -> None:
    from tests.ledger.core.test_blocks_directory import DBLOCK_1000_RAW

    eblock = EntryBlock.unmarshal(bytes.fromhex(EBLOCK_ANCHOR_1000_RAW))
    dblock = DirectoryBlock.unmarshal(bytes.fromhex(DBLOCK_1000_RAW))
    listed = dblock.entry_for_chain(eblock.chain_id)
    assert listed is not None
    assert listed.key_mr == eblock.key_mr()
    assert eblock.height == dblock.height == 1000


def test_build_places_markers_after_each_minute() -> None:
    chain = bytes([7]) * 32
    a, b, c = bytes([1]) * 32, bytes([2]) * 32, bytes([3]) * 32
    first = EntryBlock.build(chain_id=chain, height=5, entries=[(a, 0), (b, 0), (c, 3)])
    assert first.items == (a, b, minute_marker(1), c, minute_marker(4))
    assert (first.sequence, first.prev_key_mr, first.prev_full_hash) == (0, bytes(32), bytes(32))
    second = EntryBlock.build(chain_id=chain, height=9, entries=[(a, 9)], prev=first)
    assert second.items == (a, minute_marker(10))
    assert (second.sequence, second.prev_key_mr, second.prev_full_hash) == (
        1,
        first.key_mr(),
        first.full_hash(),
    )


@pytest.mark.parametrize(
    "entries",
    [[], [(bytes(32), 10)], [(bytes(32), 3), (bytes(32), 2)], [(bytes(32), True)]],
)
def test_build_rejects_bad_minutes(entries: list[tuple[bytes, int]]) -> None:
    with pytest.raises(LedgerFormatError):
        EntryBlock.build(chain_id=bytes(32), height=1, entries=entries)


def test_build_rejects_prev_of_another_chain() -> None:
    prev = EntryBlock.build(chain_id=bytes([1]) * 32, height=1, entries=[(bytes(32), 0)])
    with pytest.raises(LedgerFormatError):
        EntryBlock.build(chain_id=bytes([2]) * 32, height=2, entries=[(bytes(32), 0)], prev=prev)


def test_minute_markers() -> None:
    assert minute_marker(1) == bytes(31) + b"\x01"
    assert is_minute_marker(minute_marker(10))
    assert not is_minute_marker(bytes(32))
    assert not is_minute_marker(bytes(31) + b"\x0b")
    with pytest.raises(LedgerFormatError):
        minute_marker(0)


def test_entry_list_json_removes_markers_and_adds_minutes() -> None:
    chain = bytes([7]) * 32
    a, b = bytes([1]) * 32, bytes([2]) * 32
    block = EntryBlock.build(chain_id=chain, height=5, entries=[(a, 0), (b, 3), (a, 3)])
    body = block.to_json(directory_block_timestamp_s=6000)
    assert body == {
        "header": {
            "blocksequencenumber": 0,
            "chainid": chain.hex(),
            "prevkeymr": "00" * 32,
            "timestamp": 6000,
            "dbheight": 5,
        },
        "entrylist": [
            {"entryhash": a.hex(), "timestamp": 6060},
            {"entryhash": b.hex(), "timestamp": 6240},
            {"entryhash": a.hex(), "timestamp": 6240},
        ],
    }
    assert block.entry_hashes() == [a, b, a]
    assert block.entry_timestamp_s(b, 6000) == 6240
    with pytest.raises(LookupError):
        block.entry_timestamp_s(bytes(32), 6000)


def test_unmarshal_rejects_wrong_body_mr_and_lengths() -> None:
    raw = bytearray(bytes.fromhex(EBLOCK_6920_RAW))
    raw[40] ^= 1
    with pytest.raises(DecodeError, match="BodyMR"):
        EntryBlock.unmarshal(bytes(raw))
    with pytest.raises(DecodeError):
        EntryBlock.unmarshal(bytes.fromhex(EBLOCK_6920_RAW) + b"\x00" * 32)
    with pytest.raises(DecodeError):
        EntryBlock.unmarshal(bytes.fromhex(EBLOCK_6920_RAW)[:-1])


hashes = st.binary(min_size=32, max_size=32)
eblocks = st.builds(
    EntryBlock,
    hashes,
    st.integers(0, 2**32 - 1),
    st.integers(0, 2**32 - 1),
    hashes,
    hashes,
    st.lists(st.one_of(hashes, st.integers(1, 10).map(minute_marker)), max_size=12),
)


@given(eblocks)
def test_round_trip(block: EntryBlock) -> None:
    assert EntryBlock.unmarshal(block.marshal()) == block
    assert len(block.header()) == 140
