"""Local receipt verification before anything is written to the audit store."""

from __future__ import annotations

import pytest

from ledger.core.blocks.directory import DirectoryBlock
from ledger.core.blocks.entry_block import EntryBlock
from ledger.core.proof.steps import Step
from ledger.core.receipt import build_receipt
from tasks.documents import collection_chain_id, document_entry
from tasks.verify import ReceiptRejected, verify_node_receipt

NETWORK_ID = 0xFA92E5A4


def ledger_with(entry_hashes: list[bytes], chain_id: bytes) -> tuple[EntryBlock, DirectoryBlock]:
    eblock = EntryBlock.build(
        chain_id=chain_id, height=5, entries=[(h, i % 10) for i, h in enumerate(entry_hashes)]
    )
    dblock = DirectoryBlock.build(
        prev=None,
        network_id=NETWORK_ID,
        timestamp_min=29_000_000,
        admin_lookup_hash=bytes([1]) * 32,
        ec_header_hash=bytes([2]) * 32,
        fblock_key_mr=bytes([3]) * 32,
        entry_blocks=[(chain_id, eblock.key_mr()), (bytes([9]) * 32, bytes([8]) * 32)],
    )
    return eblock, dblock


@pytest.fixture
def setting() -> tuple[str, dict, bytes]:
    chain = collection_chain_id("unit")
    entries = [
        document_entry(chain, sha256=f"{i:064x}", size_bytes=i, path=f"f{i}") for i in range(5)
    ]
    eblock, dblock = ledger_with(
        [bytes.fromhex(e.entry_hash) for e in entries], bytes.fromhex(chain)
    )
    target = entries[3].entry_hash
    receipt = build_receipt(bytes.fromhex(target), eblock, dblock).to_json()
    return target, receipt, dblock.marshal()


def test_valid_receipt_passes(setting: tuple[str, dict, bytes]) -> None:
    target, receipt, raw = setting
    verified = verify_node_receipt(receipt, entry_hash=target, dblock_raw=raw)
    assert verified.entry_hash.hex() == target


def test_receipt_for_another_entry_fails_at_the_entry(setting: tuple[str, dict, bytes]) -> None:
    _target, receipt, raw = setting
    with pytest.raises(ReceiptRejected) as info:
        verify_node_receipt(receipt, entry_hash="00" * 32, dblock_raw=raw)
    assert info.value.step == Step.ENTRY


def test_tampered_branch_fails_at_the_merkle_steps(setting: tuple[str, dict, bytes]) -> None:
    target, receipt, raw = setting
    node = receipt["merklebranch"][1]
    node["top"] = ("0" if node["top"][0] != "0" else "1") + node["top"][1:]
    with pytest.raises(ReceiptRejected) as info:
        verify_node_receipt(receipt, entry_hash=target, dblock_raw=raw)
    assert info.value.step == Step.RECEIPT


def test_directory_block_other_than_served_fails(setting: tuple[str, dict, bytes]) -> None:
    target, receipt, _raw = setting
    chain = collection_chain_id("unit")
    _eb, other = ledger_with([bytes(32)], bytes.fromhex(chain))
    with pytest.raises(ReceiptRejected) as info:
        verify_node_receipt(receipt, entry_hash=target, dblock_raw=other.marshal())
    assert info.value.step == Step.DIRECTORY_BLOCK


def test_wrong_height_fails_at_the_directory_block(setting: tuple[str, dict, bytes]) -> None:
    target, receipt, raw = setting
    receipt["directoryblockheight"] = 7
    with pytest.raises(ReceiptRejected) as info:
        verify_node_receipt(receipt, entry_hash=target, dblock_raw=raw)
    assert info.value.step == Step.DIRECTORY_BLOCK


def test_garbage_directory_block_fails_at_the_directory_block(
    setting: tuple[str, dict, bytes],
) -> None:
    target, receipt, raw = setting
    with pytest.raises(ReceiptRejected) as info:
        verify_node_receipt(receipt, entry_hash=target, dblock_raw=raw + b"\x00")
    assert info.value.step == Step.DIRECTORY_BLOCK
