"""The steps every source shares: record documents, publish, wait for ``ledger``, report.

A source (folder, watched folder, table) turns its items into ``DocumentIn`` batches and
calls ``record_batch``; then ``publish_pending`` and ``wait_ledger`` move the collection's
notarizations forward. These functions orchestrate Prefect tasks (``tasks.steps``) and must
be called from inside a flow run. ``hash_task_runner`` is where a source's hash batches
run (threads here, or a Dask cluster), chosen by ``PipelineSettings.task_runner``.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from copy import deepcopy
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any, TypeVar

from prefect.artifacts import create_markdown_artifact
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner
from prefect.utilities.annotations import quote

from connectors.anchor import AnchorClient
from connectors.audit_store import AuditStore, DocumentIn, Stage
from connectors.callback_receiver import CALLBACK_STAGES, callback_url_for
from connectors.folder_source import ScanEntry
from connectors.node import NodeClient
from connectors.publishing import CallbackStage, PublishingClient
from flows.settings import PipelineSettings
from ledger.core.entry import Entry
from tasks.failed_writes import check_failed_writes
from tasks.hashing import HashResult
from tasks.publish import PublishOutcome
from tasks.steps import (
    StagePending,
    backoff_delays,
    publish_batch,
    record_documents,
    wait_for_ledger,
)

T = TypeVar("T")

#: Stages of a notarization still on its way to a directory block, and those in one.
WAITING_STAGES: tuple[Stage, ...] = ("pending", "published", "multi_az")
LEDGER_STAGES: tuple[Stage, ...] = ("ledger", "anchor")


@dataclass
class RunSummary:
    """What a run did, with wall time per stage in seconds.

    A document is whatever the source notarizes: a file of a folder or a row of a table.
    Every count is of this run's documents (or of the entries this run posted), except
    ``collection_totals``. Each hashed document is counted once in exactly one of
    ``skipped_known``, ``repeated_in_run``, ``queued_by_other_runs`` and ``queued``; after
    ``finish_counts`` each is in one of ``documents_in_ledger``, ``documents_waiting`` and
    ``documents_failed`` (by the stage of its notarization), so those add up to
    ``documents_seen - hash_errors``.

    Attributes:
        source, collection, chain_id: what was read and the chain it is notarized in.
        documents_seen: documents read (files found, or new and changed rows).
        hash_errors: documents that could not be read or hashed.
        refused: entries the source refused before hashing (a folder's symlinks, FIFOs,
            devices, unreadable or non-UTF-8 names: ``folder_source.scan``'s ``on_skip``).
        bytes_hashed: bytes hashed (file contents, or the rows' canonical JSON).
        skipped_known: documents whose hash the collection's chain held before this run
            started (notarized, or queued by an earlier run).
        repeated_in_run: documents with the same content as an earlier document of this
            run (one notarization serves them all).
        queued_by_other_runs: documents whose hash another run, running at the same time,
            queued after this run started.
        queued: notarizations created by this run (one per document).
        published: of ``queued``, entries this run got accepted by the publishing API.
        published_for_other_runs: pending notarizations of the collection that this run did
            not queue (left by an interrupted run, or queued by a concurrent one) and
            published, or found already accepted.
        publish_failed: entries that failed to publish in this run (retryable or not; its
            own or other runs').
        documents_in_ledger: documents whose notarization is in a directory block
            (stage ``ledger`` or ``anchor``) after the run.
        documents_with_receipt: documents whose notarization has a verified receipt stored.
        documents_waiting: documents whose notarization is still on its way (``pending``,
            ``published``, ``multi_az``).
        documents_failed: documents whose notarization failed (refused, receipt rejected,
            write given up by the publishing API).
        receipts_rejected: receipts that failed verification during this run's ledger wait
            (any notarization of the collection).
        collection_totals: the whole collection after the run, notarizations (not
            documents): ``in_ledger``, ``with_receipt``, ``waiting``, ``failed``.
        stage_seconds: wall time per step, seconds.
        errors: up to 20 messages.
    """

    source: str
    collection: str
    chain_id: str
    documents_seen: int = 0
    hash_errors: int = 0
    refused: int = 0
    bytes_hashed: int = 0
    skipped_known: int = 0
    repeated_in_run: int = 0
    queued_by_other_runs: int = 0
    queued: int = 0
    published: int = 0
    published_for_other_runs: int = 0
    publish_failed: int = 0
    documents_in_ledger: int = 0
    documents_with_receipt: int = 0
    documents_waiting: int = 0
    documents_failed: int = 0
    receipts_rejected: int = 0
    collection_totals: dict[str, int] = field(default_factory=dict)
    stage_seconds: dict[str, float] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    # Not part of the summary: when the run started (the wall clock, like the audit
    # store's ``created_at``), the notarizations of this run's documents with how many
    # documents each serves, and the ones this run created.
    _started: datetime = field(default_factory=lambda: datetime.now(UTC), repr=False)
    _documents_of: Counter[int] = field(default_factory=Counter, repr=False)
    _own: set[int] = field(default_factory=set, repr=False)

    def as_dict(self) -> dict[str, Any]:
        """The summary's public fields (copies), for JSON."""
        return {
            f.name: deepcopy(getattr(self, f.name))
            for f in fields(self)
            if not f.name.startswith("_")
        }

    def notarization_ids(self) -> set[int]:
        """The notarizations of this run's documents (its own and earlier or other runs')."""
        return set(self._documents_of)

    def add_progress(self, progress: Mapping[int, tuple[Stage, bool]]) -> None:
        """Set the ``documents_*`` counts from ``AuditStore.progress`` of
        ``notarization_ids()``: each document counted by its notarization's stage."""
        in_ledger = with_receipt = waiting = failed = 0
        for nid, documents in self._documents_of.items():
            stage, has_receipt = progress[nid]
            in_ledger += documents if stage in LEDGER_STAGES else 0
            waiting += documents if stage in WAITING_STAGES else 0
            failed += documents if stage == "failed" else 0
            with_receipt += documents if has_receipt else 0
        self.documents_in_ledger, self.documents_with_receipt = in_ledger, with_receipt
        self.documents_waiting, self.documents_failed = waiting, failed

    def add_recorded(
        self,
        docs: Sequence[DocumentIn],
        new_ids: Sequence[int],
        notarized: Mapping[str, tuple[int, datetime]],
    ) -> None:
        """Count one recorded batch (class docstring: each document in one count).

        Args:
            docs: the batch's documents, in order.
            new_ids: ids of the notarizations this run just created for them.
            notarized: ``AuditStore.notarized_at`` of the documents' hashes (after the
                batch was recorded, so every hash is there).

        Raises:
            KeyError: a document's hash has no notarization in ``notarized``.
        """
        fresh = set(new_ids)
        self.queued += len(fresh)
        for doc in docs:
            nid, created_at = notarized[doc.sha256.lower()]
            if nid in fresh:
                fresh.discard(nid)  # its first document: counted in ``queued``
                self._own.add(nid)
            elif nid in self._own:
                self.repeated_in_run += 1
            elif created_at < self._started:
                self.skipped_known += 1
            else:
                self.queued_by_other_runs += 1
            self._documents_of[nid] += 1

    def note(self, message: str) -> None:
        """Keep up to 20 error messages for the run record."""
        if len(self.errors) < 20:
            self.errors.append(message)

    def add_hashed(
        self, entries: Sequence[ScanEntry], results: Sequence[HashResult]
    ) -> list[DocumentIn]:
        """Count one hashed batch of files (bytes, or an error each) and return the
        documents to record, in order; ``results`` are ``entries``' hash results."""
        docs = []
        for entry, result in zip(entries, results, strict=True):
            if result.ok and result.sha256 is not None and result.size_bytes is not None:
                docs.append(DocumentIn(entry.relative_path, result.sha256, result.size_bytes))
                self.bytes_hashed += result.size_bytes
            else:
                self.hash_errors += 1
                self.note(f"{entry.relative_path}: {result.error}")
        return docs

    def timed(self, stage: str, fn: Callable[[], T]) -> T:
        """Run ``fn`` and add its wall time to ``stage_seconds[stage]``."""
        start = time.perf_counter()
        try:
            return fn()
        finally:
            spent = time.perf_counter() - start
            self.stage_seconds[stage] = round(self.stage_seconds.get(stage, 0.0) + spent, 3)


@dataclass
class Services:
    """The clients and the audit store a run uses (opened by ``open_services``)."""

    store: AuditStore
    api: PublishingClient
    node: NodeClient
    anchor: AnchorClient
    settings: PipelineSettings


def open_audit_store(settings: PipelineSettings) -> AuditStore:
    """The audit store of ``settings`` (riding through a PostgreSQL restart for up to
    ``audit_connect_retry_s``); the caller closes it."""
    return AuditStore(settings.audit_url, connect_retry_s=settings.audit_connect_retry_s)


@contextmanager
def open_services(settings: PipelineSettings) -> Iterator[Services]:
    """Open the audit store and the API and node clients; close them at exit.

    Raises:
        MissingApiKey: no API key is configured.
    """
    key = settings.resolve_api_key()
    store = open_audit_store(settings)
    timeout = settings.http_timeout_s
    api = _publishing_client(settings, key)
    node = NodeClient(settings.node_url, timeout_s=timeout, access=settings.node_access())
    anchor = AnchorClient(settings.anchor_url, timeout_s=timeout, access=settings.anchor_access())
    try:
        yield Services(store, api, node, anchor, settings)
    finally:
        anchor.close()
        node.close()
        api.close()
        store.close()


def _publishing_client(settings: PipelineSettings, key: str) -> PublishingClient:
    timeout, pool = settings.http_timeout_s, settings.publish_concurrency
    if settings.callback_enabled:
        return CallbackPublishingClient(
            settings.api_url, key, settings.callback_url, timeout_s=timeout, max_connections=pool
        )
    return PublishingClient(settings.api_url, key, timeout_s=timeout, max_connections=pool)


class CallbackPublishingClient(PublishingClient):
    """A publishing client whose entries ask for ``ledger`` and ``anchor`` callbacks.

    Each entry gets its own ``callback_url``: ``callback_base_url`` plus its entry hash
    (``connectors.callback_receiver.callback_url_for``), because the API's ``ledger`` and
    ``anchor`` callbacks name only the block, not the entry. The entry hash is computed
    from the posted chain ID, external IDs and content (docs/formats.md §1.2), before the POST.
    Single and bulk posts both build their bodies with ``entry_body``. Chains are created
    without callbacks (their first entry is not a document).
    """

    def __init__(self, base_url: str, api_key: str, callback_base_url: str, **kwargs: Any) -> None:
        super().__init__(base_url, api_key, **kwargs)
        self.callback_base_url = callback_base_url

    def entry_body(
        self,
        chain_id: str,
        external_ids: Sequence[bytes],
        content: bytes,
        *,
        callback_url: str | None = None,
        callback_stages: Sequence[CallbackStage] | None = None,
    ) -> dict[str, Any]:
        """The body of operation 6 with this entry's own callback URL (unless one is given)."""
        if callback_url is None:
            entry = Entry(bytes.fromhex(chain_id), tuple(external_ids), content)
            callback_url = callback_url_for(self.callback_base_url, entry.hash().hex())
            callback_stages = callback_stages or CALLBACK_STAGES
        return super().entry_body(
            chain_id,
            external_ids,
            content,
            callback_url=callback_url,
            callback_stages=callback_stages,
        )


def hash_task_runner(settings: PipelineSettings) -> TaskRunner[Any]:
    """A new (not started) task runner for hash batches: ``with runner: runner.submit(...)``.

    ``threads``: Prefect's thread pool in this process. ``dask``: ``prefect_dask``'s
    ``DaskTaskRunner`` on the cluster at ``dask_address``, or on a temporary local cluster
    (one worker process per core) when no address is set.

    Raises:
        TaskRunnerUnavailable: ``dask`` is chosen and ``prefect-dask`` is not installed.
    """
    settings.check_task_runner()
    if settings.task_runner == "dask":
        from prefect_dask import DaskTaskRunner

        return DaskTaskRunner(address=settings.dask_address)
    return ThreadPoolTaskRunner()


def chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """Consecutive slices of ``items`` of at most ``size`` elements."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def record_batch(
    summary: RunSummary, services: Services, *, source: str, docs: Sequence[DocumentIn]
) -> list[int]:
    """Record a batch of documents and queue those the chain does not hold yet.

    Returns:
        ids of the new notarizations (the others are counted by ``RunSummary.add_recorded``).
    """
    if not docs:
        return []
    ids, _skipped = record_documents(
        services.store,
        source=source,
        collection=summary.collection,
        chain_id=summary.chain_id,
        docs=quote(docs),  # not walked by Prefect: 500 records cost ~90 ms of CPU
    )
    notarized = services.store.notarized_at(summary.chain_id, [d.sha256 for d in docs])
    summary.add_recorded(docs, ids, notarized)
    return ids


def publish_pending(summary: RunSummary, services: Services, new_ids: frozenset[int]) -> None:
    """Publish every ``pending`` notarization of the collection, batch by batch.

    Rows not created by this run (``new_ids``) may have been posted by an interrupted run
    or by a concurrent one: they are looked up by entry hash before being posted again, and
    counted as ``published_for_other_runs``, not as this run's ``published``.
    """
    settings = services.settings
    own, others = PublishOutcome(), PublishOutcome()
    after_id = 0
    while True:
        rows = services.store.pending(
            stage_below="published",
            collection=summary.collection,
            limit=settings.batch_size,
            after_id=after_id,
        )
        if not rows:
            break
        after_id = rows[-1].id
        # Published in two task runs, so that each outcome counts only its own rows.
        for part, total in (
            ([r for r in rows if r.id in new_ids], own),
            ([r for r in rows if r.id not in new_ids], others),
        ):
            if not part:
                continue
            outcome = publish_batch(
                services.store,
                services.api,
                quote(part),  # not walked by Prefect (see record_batch)
                recheck_ids=frozenset(r.id for r in part if r.id not in new_ids),
                concurrency=settings.publish_concurrency,
            )
            total.add(outcome)
    summary.published += own.published + own.already_accepted
    summary.published_for_other_runs += others.published + others.already_accepted
    for total in (own, others):
        summary.publish_failed += total.failed + total.retryable_errors
        for message in total.errors:
            summary.note(message)


def wait_ledger(summary: RunSummary, services: Services, *, collection: str | None) -> None:
    """Follow the directory blocks, sweeping the ``ledger`` stage at each new one, until
    nothing waits or ``ledger_wait_s`` has passed (what is left is finished by a later
    ``collect``); a sweep that fails (node unreachable) is retried with back-off.

    Every ``failed_write_check_s`` while entries wait, the publishing API is asked for the
    writes it gave up (``tasks.failed_writes.check_failed_writes``, as ``collect_proofs``
    does): their notarizations are failed with the API's reason and no longer waited for.

    Raises:
        ConnectorError: the node stayed unreachable through the retries.
    """
    settings = services.settings
    deadline = time.time() + settings.ledger_wait_s
    while True:
        remaining = max(0.0, deadline - time.time())
        last = remaining <= settings.failed_write_check_s
        delays = backoff_delays(remaining)
        waiter = wait_for_ledger.with_options(
            retries=len(delays), retry_delay_seconds=delays, retry_condition_fn=_unless_pending
        )
        # Only the last stretch ends in StagePending (a failed task run) while entries wait.
        state = waiter(
            services.store,
            services.node,
            collection=collection,
            follow_until=time.time() + min(remaining, settings.failed_write_check_s),
            raise_pending=last,
            return_state=True,
        )
        still_waiting = None
        if state.is_completed():
            outcome = state.result()
            summary.receipts_rejected += outcome.rejected
            if not outcome.waiting:
                return
        else:
            try:
                state.result()
            except StagePending as exc:
                summary.receipts_rejected += exc.rejected
                still_waiting = f"{exc}; `notary collect` finishes them later"
        given_up = check_failed_writes(services.store, services.api, collection=collection)
        for message in given_up.errors:
            summary.note(message)
        if still_waiting is not None and not given_up.marked:
            summary.note(still_waiting)
            return


def _unless_pending(_task: Any, _task_run: Any, state: Any) -> bool:
    """Retry a sweep that failed (node unreachable), not one that followed the blocks
    until ``ledger_wait_s`` had passed."""
    return not isinstance(state.result(raise_on_failure=False), StagePending)


def finish_counts(summary: RunSummary, store: AuditStore) -> None:
    """Fill the run's documents' stage counts, and the collection's totals, from the audit
    store (the record of truth)."""
    summary.add_progress(store.progress(summary.notarization_ids()))
    counts = store.summary(summary.collection)
    summary.collection_totals = {
        "in_ledger": sum(counts[s] for s in LEDGER_STAGES),
        "with_receipt": store.receipt_count(summary.collection),
        "waiting": sum(counts[s] for s in WAITING_STAGES),
        "failed": counts["failed"],
    }


def publish_artifact(summary: RunSummary, *, key: str, title: str) -> None:
    """Attach the summary to the flow run as a markdown artifact: this run's counts, then
    the collection's totals (labelled so), then the wall time per stage."""
    rows = "\n".join(
        f"| {k} | {v} |" for k, v in summary.as_dict().items() if not isinstance(v, dict | list)
    )
    totals = "\n".join(
        f"| collection total: {k} | {v} |" for k, v in summary.collection_totals.items()
    )
    stages = "\n".join(f"| {k} | {v:.2f} s |" for k, v in summary.stage_seconds.items())
    create_markdown_artifact(
        key=key,
        markdown=f"## {title}\n\n| field | value |\n|---|---|\n{rows}\n{totals}\n\n"
        f"| stage | wall time |\n|---|---|\n{stages}\n",
        description=title,
    )
