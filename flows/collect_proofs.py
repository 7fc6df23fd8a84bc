"""The ``collect_proofs`` flow: one sweep moving pending notarizations through the stages.

Meant to run on a schedule (see ``deployments/``) and after any interrupted run: waiting
for a stage is a sweep over pending rows in the audit store, never a long sleep. Each
sweep is idempotent (entry hashes are the keys) and safe to run concurrently with a
notarization run.
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from connectors.errors import ConnectorError
from flows.pipeline import open_services
from tasks.anchor_stage import AnchorSweep
from flows.settings import PipelineSettings
from tasks.steps import sweep_anchor_once, sweep_ledger_once


@flow(name="collect-proofs", validate_parameters=False)
def collect_proofs(
    settings: PipelineSettings | None = None, collection: str | None = None
) -> dict[str, Any]:
    """Sweep the ``ledger`` stage (receipts fetched, verified, stored), then the ``anchor``
    stage (anchor proofs fetched and verified down to the proof of work) for every
    collection (or one); returns the counts of both sweeps and the stage counts afterwards."""
    settings = settings or PipelineSettings()
    with open_services(settings) as services:
        run_id = services.store.start_run("collect_proofs", parameters={"collection": collection})
        ledger = sweep_ledger_once(services.store, services.node, collection=collection)
        try:
            anchor = sweep_anchor_once(
                services.store, services.node, services.anchor, collection=collection
            )
        except ConnectorError as exc:
            # The ledger sweep's work is recorded; anchors wait for the next sweep.
            anchor = AnchorSweep(errors=[f"anchor stage skipped: {exc}"])
        counts = services.store.summary(collection)
        result = {
            "ledger_recorded": ledger.recorded,
            "ledger_waiting": ledger.waiting,
            "receipts_rejected": ledger.rejected,
            "anchored_blocks": anchor.blocks_anchored,
            "anchored": anchor.notarizations_anchored,
            "anchor_blocks_waiting": anchor.blocks_waiting,
            "anchor_blocks_rejected": anchor.blocks_rejected,
            "errors": ledger.errors + anchor.errors,
            "stages": counts,
        }
        services.store.finish_run(run_id, counts=result, status="completed")
    return result
