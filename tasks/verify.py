"""Local verification of a node receipt before it is written to the audit store.

Pure functions (no I/O): the caller fetches the receipt and the directory block's exact
bytes from the node; this module checks, in order:

1. the receipt is about the entry we published (its entry hash is the one computed from
   the document's entry bytes);
2. every Merkle step, from the entry hash through the entry block KeyMR to the directory
   block KeyMR (factom-formats section 6, ``ledger.core.receipt.verify_receipt``);
3. the directory block KeyMR is the one obtained by hashing the directory block the node
   serves at that height (header + body, section 5.3), at the height the receipt names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ledger.core.blocks.directory import DirectoryBlock
from ledger.core.errors import LedgerFormatError
from ledger.core.receipt import Receipt, verify_receipt


class ReceiptRejected(ValueError):
    """A receipt that does not prove the entry; ``step`` names the failed check (1..3)."""

    def __init__(self, message: str, *, step: int) -> None:
        super().__init__(f"step {step}: {message}")
        self.step = step


def verify_node_receipt(
    receipt_json: Mapping[str, Any], *, entry_hash: str, dblock_raw: bytes
) -> Receipt:
    """Check a node ``receipt`` object for ``entry_hash`` (hex) against a directory block.

    Args:
        receipt_json: the inner ``receipt`` object of the node's ``receipt`` method.
        entry_hash: hex entry hash the pipeline computed for the document.
        dblock_raw: exact bytes of the directory block at the receipt's height.

    Returns:
        the parsed, verified receipt.

    Raises:
        ReceiptRejected: a check failed (the message names the step).
    """
    try:
        receipt = Receipt.from_json(receipt_json)
    except LedgerFormatError as exc:
        raise ReceiptRejected(f"malformed receipt: {exc}", step=1) from exc
    if receipt.entry_hash.hex() != entry_hash:
        raise ReceiptRejected(
            f"receipt is for entry {receipt.entry_hash.hex()}, expected {entry_hash}", step=1
        )
    try:
        dblock = DirectoryBlock.unmarshal(dblock_raw)
    except LedgerFormatError as exc:
        raise ReceiptRejected(f"directory block does not parse: {exc}", step=3) from exc
    if dblock.height != receipt.directory_block_height:
        raise ReceiptRejected(
            f"directory block height {dblock.height} != receipt height "
            f"{receipt.directory_block_height}",
            step=3,
        )
    try:
        verify_receipt(receipt, trusted_directory_block_keymr=dblock.key_mr())
    except LedgerFormatError as exc:
        raise ReceiptRejected(f"Merkle proof does not hold: {exc}", step=2) from exc
    return receipt
