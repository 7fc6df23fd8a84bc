"""The ``anchor`` stage sweep: check each waiting directory block's anchor, record it.

Plain functions (no Prefect). For every directory block holding notarizations at
``ledger``, the sweep asks the node's ``anchors`` whether the block is anchored; if so it
fetches the anchor proof from the anchoring service, builds the proof bundle of one of the
block's documents and verifies it completely (entry, receipt, directory block, anchor
payload, anchor transaction inclusion, proof of work, header links). The anchor proof is
about the directory block, and every document's receipt was verified up to that block's
key Merkle root at the ``ledger`` stage, so one full check per block covers them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from connectors.anchor import AnchorClient
from connectors.audit import AnchorRecord, AuditStore, NotarizationRow
from connectors.node import NodeClient
from ledger.core.errors import LedgerFormatError
from ledger.core.proof.policy import TrustPolicy
from tasks.proofs import bundle_for


@dataclass
class AnchorSweep:
    """Blocks anchored (and notarizations moved), blocks still waiting, blocks rejected."""

    blocks_anchored: int = 0
    notarizations_anchored: int = 0
    blocks_waiting: int = 0
    blocks_rejected: int = 0
    errors: list[str] = field(default_factory=list)


def sweep_anchor(
    store: AuditStore,
    node: NodeClient,
    anchor: AnchorClient,
    *,
    collection: str | None = None,
    policy: TrustPolicy,
) -> AnchorSweep:
    """Move the notarizations of every anchored, verified directory block to ``anchor``.

    ``policy``: the trust policy each block's anchor is verified under.

    Raises:
        ConnectorError: a service could not be reached (the caller retries the sweep).
    """
    outcome = AnchorSweep()
    samples = _one_row_per_block(store, collection)
    for height, keymr in store.proofs.awaiting_anchor_blocks(collection=collection):
        info = node.anchors(height=height)
        pow_part = None if info is None else info.get("anchor_pow")
        proof = anchor.anchor_proof(height) if isinstance(pow_part, dict) else None
        row = samples.get(height)
        if proof is None or row is None:
            outcome.blocks_waiting += 1
            continue
        try:
            _verify_block(store, node, row, proof=proof, policy=policy)
        except (LedgerFormatError, ValueError) as exc:
            outcome.blocks_rejected += 1
            outcome.errors.append(f"directory block {height} ({keymr[:12]}…): {exc}")
            continue
        assert info is not None
        record = AnchorRecord.from_node(info, verified_at=datetime.now(UTC))
        outcome.notarizations_anchored += store.proofs.record_anchors(
            [record], collection=collection
        )
        outcome.blocks_anchored += 1
    return outcome


def _one_row_per_block(store: AuditStore, collection: str | None) -> dict[int, NotarizationRow]:
    samples: dict[int, NotarizationRow] = {}
    after_id = 0
    while True:
        rows = store.proofs.awaiting_anchor(collection=collection, limit=1000, after_id=after_id)
        if not rows:
            return samples
        after_id = rows[-1].id
        for row in rows:
            if row.dblock_height is not None:
                samples.setdefault(row.dblock_height, row)


def _verify_block(
    store: AuditStore,
    node: NodeClient,
    row: NotarizationRow,
    *,
    proof: dict[str, object],
    policy: TrustPolicy,
) -> None:
    if row.kind == "batch":  # a batch's first member stands for it (same entry, receipt)
        stored = store.proofs.records(batch_id=row.id, limit=1)
    else:
        stored = store.proofs.records(sha256=row.sha256, collection=row.collection, limit=1)
    receipt = stored[0].receipt if stored else None
    if receipt is None:
        raise ValueError("no verified receipt stored for the sample document")
    assert row.dblock_height is not None
    dblock_raw = bytes.fromhex(node.dblock_by_height(row.dblock_height)["rawdata"])
    key = None if row.kind == "document" else store.collections.key(row.collection)
    bundle_for(
        stored[0].notarization,
        receipt=receipt.raw,
        dblock_raw=dblock_raw,
        anchor_proof=proof,
        collection_key=key,
        policy=policy,
    )
