"""The ``ledger`` stage sweep: find receipts for published entries, verify, record.

Plain functions (no Prefect). One sweep handles every row waiting for ``ledger``: it asks
the node for their receipts in batched JSON-RPC requests, fetches each directory block
named once, verifies each receipt locally (``tasks.verify``) and writes the stage change
and the receipt in the audit store. Rows whose entry is not in a block yet stay pending for
the next sweep.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from connectors.audit_store import AuditStore, ReceiptRecord
from connectors.node import NodeClient
from tasks.verify import ReceiptRejected, verify_node_receipt


@dataclass
class SweepOutcome:
    """What one sweep did: rows moved to ``ledger``, still waiting, receipts rejected."""

    recorded: int = 0
    waiting: int = 0
    rejected: int = 0
    errors: list[str] = field(default_factory=list)


def sweep_ledger(
    store: AuditStore,
    node: NodeClient,
    *,
    collection: str | None = None,
    batch_size: int = 1000,
) -> SweepOutcome:
    """Move every published entry that a directory block records to ``ledger``.

    Raises:
        ConnectorError: the node could not be reached (the caller retries the sweep).
    """
    outcome = SweepOutcome()
    after_id = 0
    while True:
        rows = store.pending(
            stage_from="published",
            stage_below="ledger",
            collection=collection,
            limit=batch_size,
            after_id=after_id,
        )
        if not rows:
            return outcome
        after_id = rows[-1].id
        _sweep_batch(store, node, {r.entry_hash: r.id for r in rows if r.entry_hash}, outcome)


def _sweep_batch(
    store: AuditStore, node: NodeClient, ids_by_hash: dict[str, int], outcome: SweepOutcome
) -> None:
    receipts = node.receipts(list(ids_by_hash))
    found = {h: r for h, r in receipts.items() if r is not None}
    outcome.waiting += len(ids_by_hash) - len(found)
    heights = {int(r["directoryblockheight"]) for r in found.values()}
    dblocks = {h: bytes.fromhex(node.dblock_by_height(h)["rawdata"]) for h in heights}
    now = datetime.now(UTC)
    verified: list[ReceiptRecord] = []
    rejected: dict[int, str] = {}
    for entry_hash, receipt in found.items():
        height = int(receipt["directoryblockheight"])
        try:
            verify_node_receipt(receipt, entry_hash=entry_hash, dblock_raw=dblocks[height])
        except ReceiptRejected as exc:
            rejected[ids_by_hash[entry_hash]] = f"receipt rejected: {exc}"
            continue
        verified.append(ReceiptRecord.from_node(receipt, verified_at=now))
    if verified:
        # Receipts first: a run killed between the two writes leaves rows below ``ledger``
        # that the next sweep finishes (saving a receipt twice is a no-op). The other order
        # left rows at ``ledger`` with no receipt, which no sweep looks at again.
        store.save_receipts(verified)
        store.record_ledger(
            {r.entry_hash: (r.directory_block_height, r.directory_block_keymr) for r in verified}
        )
    if rejected:
        store.mark_failed(rejected, retryable=False)
    outcome.recorded += len(verified)
    outcome.rejected += len(rejected)
    outcome.errors.extend(list(rejected.values())[:5])
