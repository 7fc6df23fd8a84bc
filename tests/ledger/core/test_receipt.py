"""Receipts (docs/formats.md §6): construction, numbered verification steps, tampering, JSON."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from ledger.core.blocks.directory import DirectoryBlock
from ledger.core.blocks.entry_block import EntryBlock
from ledger.core.entry import Entry
from ledger.core.errors import DecodeError, MerkleProofError, NotInBlockError
from ledger.core.merkle import MerkleNode
from ledger.core.receipt import (
    Receipt,
    ReceiptError,
    build_receipt,
    verify_receipt,
)
from tests.ledger.core.test_blocks_directory import DBLOCK_1000_KEYMR, DBLOCK_1000_RAW
from tests.ledger.core.test_blocks_entry_block import EBLOCK_ANCHOR_1000_RAW

# Go client receipt_test.go mock response (mainnet anchor-chain entry, 7 nodes).
GO_CLIENT_RECEIPT = {
    "receipt": {
        "entry": {"entryhash": "96b2b60a0e026f3aac01e1680b4d4205ec696845b1b18a1ab6340e21835b6cfe"},
        "merklebranch": [
            {
                "left": "5f9457e8ad1eb2d7a6f2b640141035e6a1e4389d81ca6e18aab9705a83d42e48",
                "right": "96b2b60a0e026f3aac01e1680b4d4205ec696845b1b18a1ab6340e21835b6cfe",
                "top": "df025dd89485a38f69867ecbb18fc2c8ff549d9287765877b73be67d3a31a174",
            },
            {
                "left": "df025dd89485a38f69867ecbb18fc2c8ff549d9287765877b73be67d3a31a174",
                "right": "858586f758d0ca09e842eaa4cf04bc0bb8892228123f13d2569ae16365aa7750",
                "top": "73f9351a088d2228d94b6a928a5b45840d5c050ca3ffd6905dc443f4ca7adf03",
            },
            {
                "left": "c006042d665b94b6baa6105305cf02233b007192c294ce5c4c078c843fbb1ebe",
                "right": "73f9351a088d2228d94b6a928a5b45840d5c050ca3ffd6905dc443f4ca7adf03",
                "top": "ef7646f2f9251c9e50e19ab9343c25eb88c241aa49b7ca779c2318b8ccce1f8a",
            },
            {
                "left": "df3ade9eec4b08d5379cc64270c30ea7315d8a8a1a69efe2b98a60ecdd69e604",
                "right": "ef7646f2f9251c9e50e19ab9343c25eb88c241aa49b7ca779c2318b8ccce1f8a",
                "top": "0542f612db0d11bb7f0b3c2bd20363239fdab526f43c099c502e0e40995fed36",
            },
            {
                "left": "54d807c29273ef48d06d0f6a65cd6587566812157770a2ef032cd92db72d0c07",
                "right": "0542f612db0d11bb7f0b3c2bd20363239fdab526f43c099c502e0e40995fed36",
                "top": "3e7a636e0d95e2568005a9fb60ecd2a3c168a5a6fe71d097ac3567c9348cd0c1",
            },
            {
                "left": "43d96e6490c0d2aeeeb836f226e08531f1c357e7508b42a9856fd94353b2e5f4",
                "right": "3e7a636e0d95e2568005a9fb60ecd2a3c168a5a6fe71d097ac3567c9348cd0c1",
                "top": "56dbd1e0fb4bd7d13aa4cf1c2a32fe015e62650dcdc0171dc07a9197ffb4af54",
            },
            {
                "left": "2ee84f9404e8bac1a413a4151a76fa655859ebdfe71e9385c41a057b64d02bb0",
                "right": "56dbd1e0fb4bd7d13aa4cf1c2a32fe015e62650dcdc0171dc07a9197ffb4af54",
                "top": "3a38fec82b26ee916891dab3dd7a7e101ab643aff4a641d895137a7a7c9cac55",
            },
        ],
        "entryblockkeymr": "ef7646f2f9251c9e50e19ab9343c25eb88c241aa49b7ca779c2318b8ccce1f8a",
        "directoryblockkeymr": "3a38fec82b26ee916891dab3dd7a7e101ab643aff4a641d895137a7a7c9cac55",
        "bitcointransactionhash": "38464b98ffe44c71f063ff3bedf80db5e8bb6fe3848322a0966e50a60a65cfc5",
        "bitcoinblockhash": "00000000000000000589540fdaacf4f6ba37513aedc1033e68a649ffde0573ad",
    }
}


def _chain_blocks() -> tuple[Entry, EntryBlock, DirectoryBlock]:
    """A small ledger: a chain with five entries over three minutes, listed with 2 others."""
    entry = Entry.first_entry([b"receipts"], b"proof me")
    others = [Entry(entry.chain_id, (), bytes([n])) for n in range(4)]
    hashes = [(others[0].hash(), 0), (others[1].hash(), 0), (entry.hash(), 2)]
    hashes += [(others[2].hash(), 2), (others[3].hash(), 7)]
    eblock = EntryBlock.build(chain_id=entry.chain_id, height=12, entries=hashes)
    return entry, eblock, listed_second(eblock)


def listed_second(eblock: EntryBlock) -> DirectoryBlock:
    """A directory block listing ``eblock`` second of three entry blocks."""
    return DirectoryBlock.build(
        prev=None,
        network_id=0xFA92E5A4,
        timestamp_min=28_000_000,
        admin_lookup_hash=bytes([1]) * 32,
        ec_header_hash=bytes([2]) * 32,
        fblock_key_mr=bytes([3]) * 32,
        entry_blocks=[
            (bytes([0xFF]) * 32, bytes([4]) * 32),
            (eblock.chain_id, eblock.key_mr()),
            (bytes([0x10]) * 32, bytes([5]) * 32),
        ],
    )


def _receipt() -> Receipt:
    entry, eblock, dblock = _chain_blocks()
    return build_receipt(entry.hash(), eblock, dblock, raw_entry=entry.marshal())


def test_go_client_receipt_vector_verifies() -> None:
    receipt = Receipt.from_json(GO_CLIENT_RECEIPT)
    assert len(receipt.merkle_branch) == 7
    assert receipt.directory_block_height == 0 and receipt.timestamp_s == 0  # absent in the mock
    verify_receipt(
        receipt,
        trusted_directory_block_keymr=bytes.fromhex(
            "3a38fec82b26ee916891dab3dd7a7e101ab643aff4a641d895137a7a7c9cac55"
        ),
    )
    assert receipt.merkle_branch[3].left.hex().startswith("df3ade9e")  # anchor chain ID


def test_receipt_from_mainnet_blocks_1000() -> None:
    eblock = EntryBlock.unmarshal(bytes.fromhex(EBLOCK_ANCHOR_1000_RAW))
    dblock = DirectoryBlock.unmarshal(bytes.fromhex(DBLOCK_1000_RAW))
    entry_hash = eblock.entry_hashes()[0]
    receipt = build_receipt(entry_hash, eblock, dblock)
    assert receipt.directory_block_keymr.hex() == DBLOCK_1000_KEYMR
    assert receipt.entry_block_keymr == eblock.key_mr()
    assert receipt.directory_block_height == 1000
    assert receipt.timestamp_s == dblock.timestamp_s + 60 * 9  # marker 9 follows the entry
    # EBlock body (2 items): 1 node; EBlock header node; DBlock flat tree (8 leaves): 3; header.
    assert len(receipt.merkle_branch) == 1 + 1 + 3 + 1
    assert receipt.merkle_branch[2].left == dblock.entries[3].chain_id
    verify_receipt(
        receipt,
        trusted_directory_block_keymr=bytes.fromhex(DBLOCK_1000_KEYMR),
        trusted_directory_block_height=1000,
    )


def test_build_follows_the_four_construction_steps() -> None:
    entry, eblock, dblock = _chain_blocks()
    receipt = build_receipt(entry.hash(), eblock, dblock, raw_entry=entry.marshal())
    eblock_node = MerkleNode(eblock.header_hash(), eblock.body_mr(), eblock.key_mr())
    dblock_node = MerkleNode(dblock.header_hash(), dblock.body_mr(), dblock.key_mr())
    nodes = receipt.merkle_branch
    eblock_at = nodes.index(eblock_node)
    assert nodes[-1] == dblock_node
    assert nodes[eblock_at + 1].left == entry.chain_id
    assert nodes[eblock_at + 1].right == eblock.key_mr()
    assert receipt.timestamp_s == 28_000_000 * 60 + 60 * 3
    verify_receipt(receipt, trusted_directory_block_keymr=dblock.key_mr())


def test_json_round_trip_and_shape() -> None:
    receipt = _receipt()
    body = receipt.to_json()
    assert set(body) == {
        "entry",
        "merklebranch",
        "entryblockkeymr",
        "directoryblockkeymr",
        "directoryblockheight",
    }
    assert body["entry"] == {
        "entryhash": receipt.entry_hash.hex(),
        "raw": receipt.raw_entry.hex() if receipt.raw_entry else None,
        "timestamp": receipt.timestamp_s,
    }
    assert Receipt.from_json(body) == receipt
    assert Receipt.from_json({"receipt": body}) == receipt
    minimal = dataclasses.replace(receipt, raw_entry=None)
    assert "raw" not in minimal.to_json()["entry"]
    assert Receipt.from_json(minimal.to_json()) == minimal


def _mutate(body: dict, path: tuple, value: object) -> dict:
    body = copy.deepcopy(body)
    target = body
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return body


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("entry", "entryhash"), "ab" * 31),
        (("entry", "entryhash"), "zz" * 32),
        (("entry", "entryhash"), 5),
        (("entry", "raw"), "abc"),
        (("entry", "timestamp"), -1),
        (("entryblockkeymr",), "AB" * 33),
        (("directoryblockkeymr",), ""),
        (("directoryblockheight",), "7"),
        (("merklebranch",), {"left": "00"}),
        (("merklebranch", 0, "top"), "00" * 31),
        (("entry",), "not an object"),
    ],
)
def test_from_json_is_strict(path: tuple, value: object) -> None:
    body = _mutate(_receipt().to_json(), path, value)
    with pytest.raises(DecodeError):
        Receipt.from_json(body)


def test_from_json_requires_the_hashes() -> None:
    body = _receipt().to_json()
    for key in ("entry", "merklebranch", "entryblockkeymr", "directoryblockkeymr"):
        broken = dict(body)
        del broken[key]
        with pytest.raises(DecodeError):
            Receipt.from_json(broken)


def test_build_rejects_entries_and_blocks_that_are_not_there() -> None:
    entry, eblock, dblock = _chain_blocks()
    with pytest.raises(NotInBlockError) as info:
        build_receipt(bytes([9]) * 32, eblock, dblock)
    assert info.value.item == bytes([9]) * 32
    assert info.value.block_key_mr == eblock.key_mr()
    other = EntryBlock.build(chain_id=entry.chain_id, height=12, entries=[(entry.hash(), 0)])
    with pytest.raises(NotInBlockError):
        build_receipt(entry.hash(), other, dblock)
    with pytest.raises(ValueError):
        build_receipt(entry.hash(), eblock, dblock, raw_entry=b"not the entry")


# -- one negative test per verification step ------------------------------------------------


def _step(receipt: Receipt, **kwargs: object) -> int:
    with pytest.raises(ReceiptError) as info:
        verify_receipt(receipt, **kwargs)  # type: ignore[arg-type]
    assert isinstance(info.value, MerkleProofError)
    return info.value.step


def test_step_1_raw_entry_must_hash_to_the_entry_hash() -> None:
    receipt = _receipt()
    assert receipt.raw_entry is not None
    receipt.raw_entry = receipt.raw_entry + b"!"
    assert _step(receipt) == 1


def test_step_2_nodes_must_contain_the_running_hash() -> None:
    receipt = dataclasses.replace(_receipt(), raw_entry=None)
    first = receipt.merkle_branch[0]
    receipt.merkle_branch[0] = MerkleNode(bytes(32), bytes(32), first.top)
    assert _step(receipt) == 2


def test_step_2_tops_must_hash_their_children() -> None:
    receipt = _receipt()
    node = receipt.merkle_branch[1]
    receipt.merkle_branch[1] = MerkleNode(node.left, node.right, bytes(32))
    assert _step(receipt) == 2


def test_step_3_entry_block_keymr_must_be_on_the_branch() -> None:
    receipt = _receipt()
    receipt.entry_block_keymr = bytes(32)
    assert _step(receipt) == 3


def test_step_4_entry_chain_must_be_paired_with_the_entry_block() -> None:
    entry, eblock, dblock = _chain_blocks()
    stranger = Entry(bytes([0x10]) * 32, (), b"other chain")
    # An entry of another chain placed in this chain's entry block: the Merkle path is
    # sound, but the entry's own chain ID is not the one the DBlock pairs the block with.
    fake_eblock = EntryBlock.build(
        chain_id=entry.chain_id, height=12, entries=[(stranger.hash(), 0)]
    )
    fake_dblock = dataclasses.replace(
        dblock,
        entries=tuple(
            dataclasses.replace(e, key_mr=fake_eblock.key_mr())
            if e.chain_id == entry.chain_id
            else e
            for e in dblock.entries
        ),
    )
    receipt = build_receipt(stranger.hash(), fake_eblock, fake_dblock, raw_entry=stranger.marshal())
    assert _step(receipt) == 4
    verify_receipt(dataclasses.replace(receipt, raw_entry=None))  # the Merkle path itself is fine


def test_step_5_branch_must_end_at_the_directory_block_keymr() -> None:
    receipt = _receipt()
    receipt.merkle_branch = receipt.merkle_branch[:-1]
    assert _step(receipt) == 5
    other = _receipt()
    other.directory_block_keymr = bytes(32)
    assert _step(other) == 5


def test_step_6_directory_block_keymr_must_be_the_trusted_one() -> None:
    assert _step(_receipt(), trusted_directory_block_keymr=bytes(32)) == 6


def test_step_7_height_must_be_the_trusted_one() -> None:
    receipt = _receipt()
    verify_receipt(receipt, trusted_directory_block_height=0)
    assert _step(receipt, trusted_directory_block_height=1) == 7


# -- tampering -------------------------------------------------------------------------------


def _flips(value: bytes) -> list[bytes]:
    return [value[:i] + bytes([value[i] ^ 0x01]) + value[i + 1 :] for i in range(len(value))]


def test_flipping_any_byte_of_any_hash_field_fails() -> None:
    base = _receipt()
    trusted = base.directory_block_keymr
    variants: list[Receipt] = []
    for name in ("entry_hash", "entry_block_keymr", "directory_block_keymr", "raw_entry"):
        for flipped in _flips(getattr(base, name)):
            variants.append(dataclasses.replace(base, **{name: flipped}))
    for position, node in enumerate(base.merkle_branch):
        for side in ("left", "right", "top"):
            for flipped in _flips(getattr(node, side)):
                branch = list(base.merkle_branch)
                branch[position] = dataclasses.replace(node, **{side: flipped})
                variants.append(dataclasses.replace(base, merkle_branch=branch))
    assert len(variants) > 1000
    for variant in variants:
        with pytest.raises(ReceiptError):
            verify_receipt(variant, trusted_directory_block_keymr=trusted)


def test_flipping_the_height_fails_against_a_trusted_height() -> None:
    base = _receipt()
    for bit in range(32):
        changed = dataclasses.replace(
            base, directory_block_height=base.directory_block_height ^ (1 << bit)
        )
        with pytest.raises(ReceiptError):
            verify_receipt(changed, trusted_directory_block_height=base.directory_block_height)


def test_swapping_the_sides_of_any_node_fails() -> None:
    base = _receipt()
    swapped_any = False
    for position, node in enumerate(base.merkle_branch):
        if node.left == node.right:
            continue  # an unpaired node hashed with itself is symmetric
        branch = list(base.merkle_branch)
        branch[position] = MerkleNode(node.right, node.left, node.top)
        swapped_any = True
        with pytest.raises(ReceiptError):
            verify_receipt(dataclasses.replace(base, merkle_branch=branch))
    assert swapped_any


def test_the_untampered_receipt_verifies() -> None:
    receipt = _receipt()
    verify_receipt(
        receipt,
        trusted_directory_block_keymr=receipt.directory_block_keymr,
        trusted_directory_block_height=receipt.directory_block_height,
    )


def test_from_json_with_a_node_memo_shares_the_nodes_of_a_blocks_receipts() -> None:
    entry, eblock, dblock = _chain_blocks()
    hashes = eblock.entry_hashes()
    nodes: dict = {}
    parsed = [
        Receipt.from_json(build_receipt(h, eblock, dblock).to_json(), nodes=nodes) for h in hashes
    ]
    for h, receipt in zip(hashes, parsed, strict=True):
        assert receipt == Receipt.from_json(build_receipt(h, eblock, dblock).to_json())
        verify_receipt(receipt, trusted_directory_block_keymr=dblock.key_mr())
    # the nodes above the entry block are the same objects in every receipt
    tails = {tuple(id(n) for n in r.merkle_branch[-3:]) for r in parsed}
    assert len(tails) == 1
    assert len(nodes) < sum(len(r.merkle_branch) for r in parsed)


@pytest.mark.parametrize(
    "bad",
    [{"left": 1, "right": 2, "top": 3}, {"left": ["x"], "right": "", "top": ""}, {"left": "zz"}],
)
def test_from_json_with_a_node_memo_refuses_bad_nodes_and_keeps_none(bad: dict) -> None:
    body = _receipt().to_json()
    body["merklebranch"][0] = bad
    nodes: dict = {}
    with pytest.raises(DecodeError):
        Receipt.from_json(body, nodes=nodes)
    assert all(isinstance(k[0], str) and len(k[0]) == 64 for k in nodes)
