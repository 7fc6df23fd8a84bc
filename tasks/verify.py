"""Local verification of a node receipt before it is written to the audit store.

Pure functions (no I/O): the caller fetches the receipt and the directory block's exact
bytes from the node; this module checks, in order:

1. the receipt is about the entry we published (its entry hash is the one computed from
   the document's entry bytes);
2. every Merkle step, from the entry hash through the entry block KeyMR to the directory
   block KeyMR (factom-formats section 6, ``ledger.core.receipt.verify_receipt``);
3. the directory block KeyMR is the one obtained by hashing the directory block the node
   serves at that height (header + body, section 5.3), at the height the receipt names.

A sweep verifies many receipts against few directory blocks: ``TrustedDirectoryBlock``
parses and hashes each block once (``verify_node_receipt(..., dblock=...)``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ledger.core.blocks.directory import DirectoryBlock
from ledger.core.errors import LedgerFormatError
from ledger.core.receipt import Receipt, verify_receipt


class ReceiptRejected(ValueError):
    """A receipt that does not prove the entry; ``step`` names the failed check (1..3)."""

    def __init__(self, message: str, *, step: int) -> None:
        super().__init__(f"step {step}: {message}")
        self.step = step


@dataclass(frozen=True)
class TrustedDirectoryBlock:
    """A directory block the node served, parsed and hashed once (check 3's inputs).

    Attributes:
        height: the block's height (from its header).
        key_mr: its key Merkle root, 32 raw bytes, computed here from the block's bytes.
    """

    height: int
    key_mr: bytes

    @classmethod
    def parse(cls, dblock_raw: bytes) -> TrustedDirectoryBlock:
        """Parse the exact bytes of a directory block and compute its KeyMR.

        Raises:
            ReceiptRejected: the bytes are not a directory block (step 3).
        """
        try:
            dblock = DirectoryBlock.unmarshal(dblock_raw)
        except LedgerFormatError as exc:
            raise ReceiptRejected(f"directory block does not parse: {exc}", step=3) from exc
        return cls(height=dblock.height, key_mr=dblock.key_mr())


def verify_node_receipt(
    receipt_json: Mapping[str, Any],
    *,
    entry_hash: str,
    dblock_raw: bytes | None = None,
    dblock: TrustedDirectoryBlock | None = None,
) -> Receipt:
    """Check a node ``receipt`` object for ``entry_hash`` (hex) against a directory block.

    Args:
        receipt_json: the inner ``receipt`` object of the node's ``receipt`` method.
        entry_hash: hex entry hash the pipeline computed for the document.
        dblock_raw: exact bytes of the directory block at the receipt's height, or
        dblock: that block already parsed (give exactly one of the two).

    Returns:
        the parsed, verified receipt.

    Raises:
        ReceiptRejected: a check failed (the message names the step).
        ValueError: not exactly one of ``dblock_raw`` and ``dblock`` was given.
    """
    if (dblock_raw is None) == (dblock is None):
        raise ValueError("give exactly one of dblock_raw and dblock")
    try:
        receipt = Receipt.from_json(receipt_json)
    except LedgerFormatError as exc:
        raise ReceiptRejected(f"malformed receipt: {exc}", step=1) from exc
    if receipt.entry_hash.hex() != entry_hash:
        raise ReceiptRejected(
            f"receipt is for entry {receipt.entry_hash.hex()}, expected {entry_hash}", step=1
        )
    trusted = dblock if dblock is not None else TrustedDirectoryBlock.parse(dblock_raw or b"")
    if trusted.height != receipt.directory_block_height:
        raise ReceiptRejected(
            f"directory block height {trusted.height} != receipt height "
            f"{receipt.directory_block_height}",
            step=3,
        )
    try:
        verify_receipt(receipt, trusted_directory_block_keymr=trusted.key_mr)
    except LedgerFormatError as exc:
        raise ReceiptRejected(f"Merkle proof does not hold: {exc}", step=2) from exc
    return receipt
