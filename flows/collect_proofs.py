"""The ``collect_proofs`` flow and the long-running collector around it.

``collect_proofs`` is one sweep moving pending notarizations through the stages: it first
publishes what runs left ``pending`` (the publishing API was unreachable, or the run was
stopped), so that a scheduled ``collect`` finishes it instead of the next run. It runs on
a schedule (see ``deployments/``) and after any interrupted run: waiting for a stage is a
sweep over pending rows in the audit store, never a long sleep. Each sweep is idempotent
(entry hashes are the keys) and safe to run concurrently with a notarization run.

``collect_until_stopped`` (``notary collect --listen``) repeats the sweep: after a sweep
that moved nothing while entries still wait, the pause doubles (from
``collect_first_interval_s`` up to ``collect_interval_s``); a failed sweep (node or
anchoring service unreachable) is retried the same way. With callbacks
(``receive_callbacks``), the publishing API's ``ledger`` and ``anchor`` callbacks end the
pause at once, so an entry's receipt is fetched and verified right after its block instead
of at the next tick. A callback is only a wake-up: the sweep still verifies everything.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from prefect import flow

from connectors.callback_receiver import (
    CallbackEvent,
    CallbackRecorder,
    CallbackServer,
    create_receiver_app,
)
from connectors.errors import ConnectorError
from flows.pipeline import Services, open_audit_store, open_services, publish_pending
from flows.run_heartbeat import RunHeartbeat
from flows.run_summary import RunSummary
from flows.settings import PipelineSettings
from tasks.anchor_stage import AnchorSweep
from tasks.failed_writes import FailedWrites, check_failed_writes
from tasks.steps import sweep_anchor_once, sweep_ledger_once, sweep_timestamps_once
from tasks.timestamp_sweep import TimestampSweep

__all__ = ["CollectTotals", "collect_proofs", "collect_until_stopped", "receive_callbacks"]

logger = logging.getLogger(__name__)

#: Longest single wait on the wake-up event, so that ``stop`` is noticed promptly.
_STOP_CHECK_S = 0.2


@flow(name="collect-proofs", validate_parameters=False)
def collect_proofs(
    settings: PipelineSettings | None = None, collection: str | None = None
) -> dict[str, Any]:
    """Publish the notarizations left ``pending`` (looked up by entry hash first: a stopped
    run may have posted them), sweep the ``ledger`` stage (receipts fetched, verified,
    stored; writes the publishing API gave up failed with its reason), then the ``anchor`` stage (anchor proofs fetched
    and verified down to the proof of work) for every collection (or one), then records
    the anchored blocks' independent timestamps as they arrive (``tasks.timestamp_sweep``);
    returns the counts of the sweeps and the stage counts afterwards.

    Raises:
        ConnectorError: the node could not be reached (nothing was recorded by the ledger
            sweep; an unreachable anchoring service only skips the anchor sweep).
    """
    settings = settings or PipelineSettings()
    with open_services(settings) as services:
        run_id = services.store.runs.start(
            "collect_proofs",
            parameters={"collection": collection},
            stale_after_s=settings.run_stale_s,
        )
        with RunHeartbeat(services.store, run_id, interval_s=settings.run_heartbeat_s):
            result = _collect(services, collection)
        services.store.runs.finish(run_id, counts=result, status="completed")
    return result


def _collect(services: Services, collection: str | None) -> dict[str, Any]:
    """One sweep of each stage (``collect_proofs``), its counts."""
    published = RunSummary("collect", collection or "", "")
    publish_pending(published, services, collection)
    ledger = sweep_ledger_once(services.store, services.node, collection=collection)
    given_up = FailedWrites()
    if ledger.waiting:  # some may wait for a write the API gave up
        given_up = check_failed_writes(services.store, services.api, collection=collection)
    try:
        anchor = sweep_anchor_once(
            services.store,
            services.node,
            services.anchor,
            collection=collection,
            policy=services.settings.policy(),
        )
    except ConnectorError as exc:
        # The ledger sweep's work is recorded; anchors wait for the next sweep.
        anchor = AnchorSweep(errors=[f"anchor stage skipped: {exc}"])
    try:
        stamps = sweep_timestamps_once(services.store, services.anchor, collection=collection)
    except ConnectorError as exc:
        stamps = TimestampSweep(errors=[f"timestamps skipped: {exc}"])
    counts = services.store.runs.summary(collection)
    result = {
        "published": published.published_for_other_runs,
        "publish_failed": published.publish_failed,
        "ledger_recorded": ledger.recorded,
        "ledger_waiting": ledger.waiting,
        "receipts_rejected": ledger.rejected,
        "anchored_blocks": anchor.blocks_anchored,
        "anchored": anchor.notarizations_anchored,
        "anchor_blocks_waiting": anchor.blocks_waiting,
        "anchor_blocks_rejected": anchor.blocks_rejected,
        "failed_writes": given_up.marked,
        "timestamps_recorded": stamps.recorded,
        "errors": published.errors
        + ledger.errors
        + given_up.errors
        + anchor.errors
        + stamps.errors,
        "stages": counts,
    }
    return result


@dataclass
class CollectTotals:
    """What a ``collect_until_stopped`` session did (sums over its sweeps)."""

    sweeps: int = 0
    failed_sweeps: int = 0
    woken_by_callback: int = 0
    ledger_recorded: int = 0
    receipts_rejected: int = 0
    anchored: int = 0
    errors: list[str] = field(default_factory=list)

    def add(self, result: dict[str, Any]) -> None:
        """Add one ``collect_proofs`` result."""
        self.sweeps += 1
        self.ledger_recorded += result["ledger_recorded"]
        self.receipts_rejected += result["receipts_rejected"]
        self.anchored += result["anchored"]
        for message in result["errors"]:
            self.note(message)

    def note(self, message: str) -> None:
        """Keep the last 20 error messages."""
        self.errors = [*self.errors, message][-20:]


SweepHandler = Callable[[dict[str, Any], bool], None]


def collect_until_stopped(
    settings: PipelineSettings,
    collection: str | None = None,
    *,
    stop: threading.Event,
    wake: threading.Event | None = None,
    on_sweep: SweepHandler | None = None,
) -> CollectTotals:
    """Run ``collect_proofs`` again and again until ``stop`` is set.

    Args:
        settings: pipeline settings (``collect_first_interval_s``, ``collect_interval_s``).
        collection: only this collection.
        stop: set it to end the loop (checked at least every 0.2 s while waiting).
        wake: set it (a callback arrived) to sweep now instead of at the end of the pause.
        on_sweep: called with (``collect_proofs`` result, whether a wake-up started it).

    Returns:
        the session's totals.
    """
    wake = wake or threading.Event()
    totals = CollectTotals()
    delay = settings.collect_first_interval_s
    woken = False
    while not stop.is_set():
        try:
            result = collect_proofs(settings, collection)
        except ConnectorError as exc:
            totals.failed_sweeps += 1
            totals.note(f"sweep failed: {exc}")
            logger.warning("sweep failed (retrying in %.1f s): %s", delay, exc)
            delay = min(delay * 2, settings.collect_interval_s)
        else:
            totals.add(result)
            if on_sweep is not None:
                on_sweep(result, woken)
            delay = _next_delay(result, delay, settings)
        woken = _pause(delay, stop=stop, wake=wake)
        totals.woken_by_callback += woken
    return totals


def _next_delay(result: dict[str, Any], delay: float, settings: PipelineSettings) -> float:
    """Back to the first interval after progress; doubled while entries wait unchanged;
    the longest interval when nothing waits (a callback or the tick finds new work)."""
    waiting = result["ledger_waiting"] or result["anchor_blocks_waiting"]
    if not waiting:
        return settings.collect_interval_s
    if result["ledger_recorded"] or result["anchored"]:
        return settings.collect_first_interval_s
    return min(delay * 2, settings.collect_interval_s)


def _pause(delay_s: float, *, stop: threading.Event, wake: threading.Event) -> bool:
    """Wait up to ``delay_s``; True when a callback's ``wake`` ended the pause (``wake`` is
    then cleared; a wake that comes with ``stop`` is not a callback's)."""
    waited = 0.0
    while waited < delay_s and not stop.is_set():
        step = min(_STOP_CHECK_S, delay_s - waited)
        if wake.wait(step):
            wake.clear()
            return not stop.is_set()
        waited += step
    return False


@contextmanager
def receive_callbacks(
    settings: PipelineSettings, on_recorded: Callable[[CallbackEvent], None]
) -> Iterator[CallbackServer]:
    """Serve the callback receiver on ``callback_host:callback_port`` while the block runs.

    Args:
        settings: where to listen, the callback URL and the API's HMAC key.
        on_recorded: called (from a receiver thread) after a callback event is recorded.

    Raises:
        MissingCallbackSecret: the API's callback secret is not configured.
        RuntimeError: the receiver could not listen (port in use).
    """
    secret = settings.resolve_callback_secret()
    with open_audit_store(settings) as store:
        app = create_receiver_app(
            secret=secret,
            callback_url=settings.callback_url,
            recorder=CallbackRecorder(store),
            on_recorded=on_recorded,
            max_skew_s=settings.callback_max_skew_s,
        )
        with CallbackServer(app, host=settings.callback_host, port=settings.callback_port) as srv:
            yield srv
