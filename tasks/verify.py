"""Local verification of a node receipt before it is written to the audit store.

Pure functions (no I/O): the caller fetches the receipt and the directory block's exact
bytes from the node. The checks are the receipt's share of the proof bundle verifier's
numbered steps (``ledger.core.proof.steps.Step``, docs/proof-bundle.md), checked in the
same order, so a receipt rejected here names the step ``notary verify`` would name:

- ``Step.FORMAT`` (0): the receipt object parses (hex fields, hash lengths, integers);
- ``Step.ENTRY`` (4): it is about the entry we published (its entry hash is the one
  computed from the document's entry bytes);
- ``Step.RECEIPT`` (5): every Merkle step, from the entry hash through the entry block
  KeyMR to the directory block KeyMR it names (``ledger.core.receipt.verify_receipt``);
- ``Step.DIRECTORY_BLOCK`` (6): that KeyMR and the receipt's height are those of the
  directory block the node serves at that height (parsed exactly, header + body hashed).

A sweep verifies many receipts against few directory blocks: ``TrustedDirectoryBlock``
parses and hashes each block once (``verify_node_receipt(..., dblock=...)``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ledger.core.blocks.directory import DirectoryBlock
from ledger.core.errors import LedgerFormatError
from ledger.core.proof.steps import Step
from ledger.core.receipt import NodeMemo, Receipt, verify_receipt
from tasks.errors import TaskError

__all__ = ["ReceiptRejected", "TrustedDirectoryBlock", "verify_node_receipt"]


class ReceiptRejected(TaskError, ValueError):
    """A receipt that does not prove the entry.

    The message is ``"step N (title): reason"``, as ``ProofError`` writes it.

    Attributes:
        step: the ``Step`` that failed (an ``IntEnum``: compares equal to its number).
    """

    def __init__(self, message: str, *, step: Step) -> None:
        super().__init__(f"step {int(step)} ({step.title}): {message}")
        self.step = step


@dataclass(frozen=True)
class TrustedDirectoryBlock:
    """A directory block the node served, parsed and hashed once (the last check's inputs).

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
            ReceiptRejected: the bytes are not a directory block (``Step.DIRECTORY_BLOCK``).
        """
        try:
            dblock = DirectoryBlock.unmarshal(dblock_raw)
        except LedgerFormatError as exc:
            raise ReceiptRejected(
                f"directory block does not parse: {exc}", step=Step.DIRECTORY_BLOCK
            ) from exc
        return cls(height=dblock.height, key_mr=dblock.key_mr())


def verify_node_receipt(
    receipt_json: Mapping[str, Any],
    *,
    entry_hash: str,
    dblock_raw: bytes | None = None,
    dblock: TrustedDirectoryBlock | None = None,
    nodes: NodeMemo | None = None,
) -> Receipt:
    """Check a node ``receipt`` object for ``entry_hash`` (hex) against a directory block.

    Args:
        receipt_json: the inner ``receipt`` object of the node's ``receipt`` method.
        entry_hash: hex entry hash the pipeline computed for the document.
        dblock_raw: exact bytes of the directory block at the receipt's height, or
        dblock: that block already parsed (give exactly one of the two).
        nodes: branch nodes parsed for other receipts (``Receipt.from_json``): give one
            dict to the receipts of a page, whose branches share most of their nodes. Every
            node is still checked (the walk hashes each one).

    Returns:
        the parsed, verified receipt.

    Raises:
        ReceiptRejected: a check failed (``.step`` names it; module docstring).
        ValueError: not exactly one of ``dblock_raw`` and ``dblock`` was given.
    """
    if (dblock_raw is None) == (dblock is None):
        raise ValueError("give exactly one of dblock_raw and dblock")
    try:
        receipt = Receipt.from_json(receipt_json, nodes=nodes)
    except LedgerFormatError as exc:
        raise ReceiptRejected(f"malformed receipt: {exc}", step=Step.FORMAT) from exc
    if receipt.entry_hash.hex() != entry_hash:
        raise ReceiptRejected(
            f"receipt is for entry {receipt.entry_hash.hex()}, expected {entry_hash}",
            step=Step.ENTRY,
        )
    try:
        verify_receipt(receipt)
    except LedgerFormatError as exc:
        raise ReceiptRejected(f"Merkle proof does not hold: {exc}", step=Step.RECEIPT) from exc
    trusted = dblock if dblock is not None else TrustedDirectoryBlock.parse(dblock_raw or b"")
    _check_directory_block(receipt, trusted)
    return receipt


def _check_directory_block(receipt: Receipt, trusted: TrustedDirectoryBlock) -> None:
    """``Step.DIRECTORY_BLOCK``: the served block is the one the receipt ends at."""
    if trusted.key_mr != receipt.directory_block_keymr:
        raise ReceiptRejected(
            f"the served directory block's KeyMR {trusted.key_mr.hex()} is not the"
            f" receipt's {receipt.directory_block_keymr.hex()}",
            step=Step.DIRECTORY_BLOCK,
        )
    if trusted.height != receipt.directory_block_height:
        raise ReceiptRejected(
            f"directory block height {trusted.height} != receipt height "
            f"{receipt.directory_block_height}",
            step=Step.DIRECTORY_BLOCK,
        )
