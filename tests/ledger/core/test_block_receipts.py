"""``BlockReceipts``: every entry's receipt is exactly ``build_receipt(...).to_json()``."""

from __future__ import annotations

import pytest

from ledger.core.block_receipts import BlockReceipts
from ledger.core.blocks.directory import DirectoryBlock
from ledger.core.blocks.entry_block import EntryBlock
from ledger.core.entry import Entry
from ledger.core.errors import NotInBlockError
from ledger.core.receipt import Receipt, build_receipt, verify_receipt
from tests.ledger.core.test_blocks_directory import DBLOCK_1000_RAW
from tests.ledger.core.test_blocks_entry_block import EBLOCK_ANCHOR_1000_RAW
from tests.ledger.core.test_receipt import listed_second


def _blocks(count: int) -> tuple[list[bytes], EntryBlock, DirectoryBlock]:
    """``count`` entries over the ten minutes (one repeated: its first occurrence counts),
    in an entry block listed second of three in a directory block."""
    chain = Entry.first_entry([b"block receipts"], b"first")
    hashes = [Entry(chain.chain_id, (), n.to_bytes(4, "big")).hash() for n in range(count)]
    items = [(h, min(9, 10 * n // count)) for n, h in enumerate(hashes)]
    items.append((hashes[0], 9))  # the same entry again, later
    eblock = EntryBlock.build(chain_id=chain.chain_id, height=7, entries=items)
    return hashes, eblock, listed_second(eblock)


@pytest.mark.parametrize("count", [1, 2, 3, 37, 256])
def test_every_receipt_is_the_one_build_receipt_makes(count: int) -> None:
    hashes, eblock, dblock = _blocks(count)
    receipts = BlockReceipts(eblock, dblock)
    for entry_hash in hashes:
        made = receipts.receipt_json(entry_hash)
        assert made == build_receipt(entry_hash, eblock, dblock).to_json()
        verify_receipt(Receipt.from_json(made), trusted_directory_block_keymr=dblock.key_mr())


def test_mainnet_blocks_1000() -> None:
    eblock = EntryBlock.unmarshal(bytes.fromhex(EBLOCK_ANCHOR_1000_RAW))
    dblock = DirectoryBlock.unmarshal(bytes.fromhex(DBLOCK_1000_RAW))
    entry_hash = eblock.entry_hashes()[0]
    made = BlockReceipts(eblock, dblock).receipt_json(entry_hash)
    assert made == build_receipt(entry_hash, eblock, dblock).to_json()


def test_receipt_and_entry_objects_are_new_each_time() -> None:
    hashes, eblock, dblock = _blocks(4)
    receipts = BlockReceipts(eblock, dblock)
    first = receipts.receipt_json(hashes[1])
    first["entry"]["raw"] = "00"
    first["merklebranch"].append({"left": "", "right": "", "top": ""})
    assert receipts.receipt_json(hashes[1]) == build_receipt(hashes[1], eblock, dblock).to_json()


def test_entries_and_blocks_that_are_not_there_are_refused_as_build_receipt_does() -> None:
    hashes, eblock, dblock = _blocks(4)
    with pytest.raises(NotInBlockError) as info:
        BlockReceipts(eblock, dblock).receipt_json(bytes([9]) * 32)
    assert info.value.item == bytes([9]) * 32
    assert info.value.block_key_mr == eblock.key_mr()
    unlisted = EntryBlock.build(chain_id=eblock.chain_id, height=7, entries=[(hashes[0], 0)])
    with pytest.raises(NotInBlockError):
        BlockReceipts(unlisted, dblock)
