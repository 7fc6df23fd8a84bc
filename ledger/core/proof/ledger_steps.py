"""Steps 5-6 of ``verify_bundle``: the receipt up to the directory block, and that block.

5. Merkle steps: every receipt node holds the running hash and its ``top`` is
   SHA256(left || right); the entry block KeyMR is on the path, paired with the entry's
   chain ID; the last top is the directory block KeyMR (``ledger.core.receipt``).
6. directory block: the raw block parses exactly, and its recomputed KeyMR and height are
   the receipt's (docs/formats.md section 5.3).

Pure: no I/O.
"""

from __future__ import annotations

from datetime import UTC, datetime

from ledger.core.blocks.directory import DirectoryBlock
from ledger.core.errors import LedgerFormatError
from ledger.core.merkle import MerkleNode
from ledger.core.proof.bundle import ProofBundle
from ledger.core.proof.steps import ProofError, Step, StepReport
from ledger.core.receipt import Receipt, ReceiptError, verify_receipt

__all__ = ["check_directory_block", "check_receipt", "directory_block_report"]


def check_receipt(bundle: ProofBundle) -> StepReport:
    """Step 5: ``verify_receipt`` over the bundle's receipt and entry bytes.

    Raises:
        ProofError: a receipt check failed (its reason, with the receipt's own step).
    """
    r = bundle.receipt
    try:
        receipt = Receipt(
            entry_hash=r.entry_hash,
            merkle_branch=[MerkleNode(*node) for node in r.branch],
            entry_block_keymr=r.entry_block_keymr,
            directory_block_keymr=r.directory_block_keymr,
            directory_block_height=r.directory_block_height,
            timestamp_s=0,
            raw_entry=bundle.entry,
        )
        verify_receipt(receipt)
    except ReceiptError as exc:
        reason = str(exc)
        if exc.expected is not None and exc.computed is not None:
            reason = reason.removesuffix(
                f" (expected {exc.expected.hex()}, computed {exc.computed.hex()})"
            )
        raise ProofError(
            Step.RECEIPT, reason, expected=exc.expected, computed=exc.computed
        ) from exc
    except LedgerFormatError as exc:
        raise ProofError(Step.RECEIPT, f"malformed receipt: {exc}") from exc
    return StepReport(
        Step.RECEIPT,
        f"{len(r.branch)} nodes: entry -> entry block {r.entry_block_keymr.hex()}"
        f" -> directory block KeyMR {r.directory_block_keymr.hex()}",
    )


def check_directory_block(bundle: ProofBundle) -> DirectoryBlock:
    """Step 6: the bundle's directory block, parsed, with the receipt's KeyMR and height.

    Raises:
        ProofError: it does not parse exactly, or its KeyMR or height is not the receipt's.
    """
    try:
        dblock = DirectoryBlock.unmarshal(bundle.directory_block)
    except LedgerFormatError as exc:
        raise ProofError(Step.DIRECTORY_BLOCK, f"directory block does not parse: {exc}") from exc
    keymr = dblock.key_mr()
    if keymr != bundle.receipt.directory_block_keymr:
        raise ProofError(
            Step.DIRECTORY_BLOCK,
            "the directory block's KeyMR is not the receipt's",
            expected=bundle.receipt.directory_block_keymr,
            computed=keymr,
        )
    if dblock.height != bundle.receipt.directory_block_height:
        raise ProofError(
            Step.DIRECTORY_BLOCK,
            f"the directory block is at height {dblock.height},"
            f" the receipt says {bundle.receipt.directory_block_height}",
        )
    return dblock


def directory_block_report(dblock: DirectoryBlock) -> StepReport:
    """Step 6's report: height, KeyMR and the block's start time (UTC, to the minute)."""
    try:
        when = datetime.fromtimestamp(dblock.timestamp_s, UTC).strftime("%Y-%m-%d %H:%M UTC")
    except (OverflowError, OSError, ValueError):
        # The header's minute count (uint32) reaches past year 9999, which datetime cannot
        # show; the proof does not depend on the date, so name the raw value instead.
        when = f"{dblock.timestamp_s} s after the Unix epoch"
    return StepReport(
        Step.DIRECTORY_BLOCK,
        f"height {dblock.height}, KeyMR {dblock.key_mr().hex()}, started {when}",
    )
