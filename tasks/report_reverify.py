"""Re-verification of stored receipts for the audit report (``tasks.report``).

``reverify_receipts`` picks a seeded sample of the stored receipts (``ReceiptSample``:
reservoir sampling, so a streamed report holds only the sample) and verifies each again
against the node's directory block at its height (``tasks.verify.verify_node_receipt``:
proof steps 4-6), after checking that the stored columns agree with the stored raw
receipt (step 0). ``reverify_chosen`` does the second half for a sample already taken.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from connectors.audit import NotarizationRow, ProofRecord, proof_order
from ledger.core.proof.steps import Step
from tasks.verify import ReceiptRejected, verify_node_receipt

__all__ = [
    "REVERIFY_COLUMNS",
    "DblockFetcher",
    "ReceiptSample",
    "reverify_chosen",
    "reverify_receipts",
]

REVERIFY_COLUMNS = (
    "notarization_id",
    "path",
    "entry_hash",
    "dblock_height",
    "status",
    "step",
    "message",
)

#: Height -> the exact bytes of the node's directory block there (``LookupError``: none).
DblockFetcher = Callable[[int], bytes]


def reverify_receipts(
    proofs: Sequence[ProofRecord],
    fetch_dblock: DblockFetcher,
    *,
    sample: int = 50,
    seed: int = 0,
) -> pd.DataFrame:
    """Verify a random sample of stored receipts again, against the node's directory blocks.

    Per sampled receipt: (0) the stored columns and the notarization agree with the stored
    raw receipt; then ``verify_node_receipt`` (the proof steps 4 entry hash, 5 Merkle
    path, 6 directory block at the receipt's height) with the bytes
    ``fetch_dblock(height)`` returns (called once per height).

    Args:
        proofs: notarizations with their receipts (those without one are not sampled; a
            batch's receipt is sampled once, as its first member).
        fetch_dblock: height -> exact directory block bytes; raises ``LookupError`` when
            the node has no block there (a rejection); any other exception marks the
            receipt ``unavailable``.
        sample: how many receipts at most (a seeded random choice, reported by id; the
            choice of ``ReceiptSample``, the same as a streamed report's).
        seed: seed of the choice, so a report can be reproduced.

    Returns:
        one row per sampled receipt, ``REVERIFY_COLUMNS``; ``status`` is ``ok``,
        ``rejected`` (with ``step``) or ``unavailable``.
    """
    chosen = ReceiptSample(sample, seed=seed)
    chosen.add(sorted(proofs, key=proof_order))
    return reverify_chosen(chosen.chosen, fetch_dblock)


def reverify_chosen(proofs: Sequence[ProofRecord], fetch_dblock: DblockFetcher) -> pd.DataFrame:
    """``reverify_receipts`` of exactly these ``proofs`` (each with a receipt), by id."""
    blocks: dict[int, bytes | Exception] = {}
    rows = [_reverify_one(p, blocks, fetch_dblock) for p in sorted(proofs, key=_proof_id)]
    return pd.DataFrame(rows, columns=list(REVERIFY_COLUMNS))


class ReceiptSample:
    """A seeded uniform sample of at most ``size`` stored receipts from records seen in
    ``proofs`` order (by id, a batch's members by leaf), one per receipt: reservoir
    sampling, so memory holds ``size`` records however many stream by.

    Records without a receipt are not sampled; a batch's members share its receipt, so
    only its first member counts. The same records in the same order and ``seed`` give
    the same choice.
    """

    def __init__(self, size: int, *, seed: int = 0) -> None:
        self.size = max(size, 0)
        self.seen = 0  # distinct stored receipts so far
        self._random = random.Random(seed)
        self._last_id: int | None = None
        self._chosen: list[ProofRecord] = []

    def add(self, proofs: Iterable[ProofRecord]) -> None:
        """Offer the next records (in ``proofs`` order, after those offered before)."""
        for proof in proofs:
            row_id = proof.notarization.id
            if proof.receipt is None or row_id == self._last_id:
                continue
            self._last_id = row_id
            self.seen += 1
            if len(self._chosen) < self.size:
                self._chosen.append(proof)
                continue
            slot = self._random.randrange(self.seen)
            if slot < self.size:
                self._chosen[slot] = proof

    @property
    def chosen(self) -> list[ProofRecord]:
        """The sample, by notarization id."""
        return sorted(self._chosen, key=_proof_id)


def _proof_id(proof: ProofRecord) -> int:
    return proof.notarization.id


def _reverify_one(
    proof: ProofRecord, blocks: dict[int, bytes | Exception], fetch: DblockFetcher
) -> dict[str, Any]:
    row, receipt = proof.notarization, proof.receipt
    assert receipt is not None
    height = receipt.directory_block_height
    out = {"notarization_id": row.id, "path": row.path, "entry_hash": row.entry_hash}
    out |= {"dblock_height": height, "status": "ok", "step": None, "message": ""}
    mismatch = _stored_mismatch(row, receipt.raw, receipt)
    if mismatch:
        return out | {"status": "rejected", "step": 0, "message": mismatch}
    if height not in blocks:
        try:
            blocks[height] = fetch(height)
        except Exception as exc:  # recorded per receipt; the report must still be written
            blocks[height] = exc
    block = blocks[height]
    if isinstance(block, LookupError):
        message = f"the node has no directory block at height {height}"
        return out | {"status": "rejected", "step": Step.DIRECTORY_BLOCK, "message": message}
    if isinstance(block, Exception):
        return out | {"status": "unavailable", "message": f"{type(block).__name__}: {block}"}
    try:
        verify_node_receipt(receipt.raw, entry_hash=row.entry_hash or "", dblock_raw=block)
    except ReceiptRejected as exc:
        return out | {"status": "rejected", "step": exc.step, "message": str(exc)}
    return out


def _stored_mismatch(row: NotarizationRow, raw: Mapping[str, Any], receipt: Any) -> str:
    """Why the stored columns disagree with the stored raw receipt ('' when they agree)."""
    checks = [
        ("entry hash", raw.get("entry", {}).get("entryhash"), receipt.entry_hash),
        ("notarization entry hash", receipt.entry_hash, row.entry_hash),
        ("merkle branch", raw.get("merklebranch"), receipt.merkle_branch),
        ("entry block KeyMR", raw.get("entryblockkeymr"), receipt.entry_block_keymr),
        ("directory block KeyMR", raw.get("directoryblockkeymr"), receipt.directory_block_keymr),
        ("notarization directory block KeyMR", receipt.directory_block_keymr, row.dblock_keymr),
        ("height", raw.get("directoryblockheight", 0), receipt.directory_block_height),
        ("notarization height", receipt.directory_block_height, row.dblock_height),
    ]
    bad = [name for name, stored_raw, column in checks if stored_raw != column]
    return f"stored values differ from the stored receipt: {', '.join(bad)}" if bad else ""
