"""The steps every source shares: record documents, publish, wait for ``ledger``, report.

A source (folder, watched folder, table) opens its collection (``open_collection``: its
publish mode, key and chain), turns its items into ``DocumentIn`` windows and hands each to
a ``Recorder``, which records and publishes them as they come (per the collection's mode:
one batch entry per ``aggregate_batch_size`` new documents, or one entry per document);
then ``publish_pending`` finishes what earlier runs left and ``wait_ledger`` moves the
collection's notarizations forward. These functions orchestrate Prefect tasks
(``tasks.steps``) and must be called from inside a flow run. ``hash_task_runner`` is where a source's hash batches
run (threads here, or a Dask cluster), chosen by ``PipelineSettings.task_runner``.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import islice
from typing import Any, TypeVar

from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner
from prefect.utilities.annotations import quote

from connectors.anchor import AnchorClient
from connectors.audit import (
    AuditStore,
    CollectionRecord,
    DocumentIn,
    NotarizationKind,
    NotarizationRow,
)
from connectors.callback_receiver import CALLBACK_STAGES, callback_url_for
from connectors.node import NodeClient
from connectors.publishing import NewEntry, PublishingClient
from flows.run_summary import RunSummary
from flows.settings import PipelineSettings
from ledger.core.entry import Entry
from tasks.documents import chain_for
from tasks.failed_writes import check_failed_writes
from tasks.ledger_follow import LedgerFollower
from tasks.publish import PublishOutcome
from tasks.steps import (
    StagePending,
    backoff_delays,
    publish_batch,
    record_aggregate,
    record_documents,
    record_new_documents,
    wait_for_ledger,
)

T = TypeVar("T")


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
    hook = EntryCallbacks(settings.callback_url) if settings.callback_enabled else None
    return PublishingClient(
        settings.api_url,
        key,
        timeout_s=settings.http_timeout_s,
        max_connections=settings.publish_concurrency,
        entry_body_hook=hook,
    )


class EntryCallbacks:
    """An ``EntryBodyHook``: every entry asks for its own ``ledger`` and ``anchor`` callbacks.

    Each entry gets its own ``callback_url``: ``base_url`` plus its entry hash
    (``connectors.callback_receiver.callback_url_for``), because the API's ``ledger`` and
    ``anchor`` callbacks name only the block, not the entry. The entry hash is computed
    from the posted chain ID, external IDs and content (docs/formats.md §1.2), before the
    POST. Single and bulk posts both build their bodies through the hook; an entry posted
    with a callback URL of its own keeps it. Chains are created without callbacks (their
    first entry is not a document).

    Args:
        base_url: the callback receiver's URL (``PipelineSettings.callback_url``).
    """

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    def __call__(self, chain_id: str, entry: NewEntry, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` with this entry's own callback URL and stages (unless it has a URL)."""
        if "callback_url" in body:
            return body
        hashed = Entry(bytes.fromhex(chain_id), entry.external_ids, entry.content).hash()
        body = body | {"callback_url": callback_url_for(self.base_url, hashed.hex())}
        return body | {"callback_stages": body.get("callback_stages") or list(CALLBACK_STAGES)}


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


def windows(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Consecutive lists of at most ``size`` items, taken lazily from ``items``."""
    iterator = iter(items)
    while window := list(islice(iterator, size)):
        yield window


def open_collection(services: Services, name: str) -> CollectionRecord:
    """The collection ``name``, registered with ``settings.publish_mode`` on first use.

    A mode that was not chosen (neither ``--mode`` nor ``NOTARY_PUBLISH_MODE``: the
    ``aggregate`` default) applies to new collections only; a registered one keeps its
    mode (a version-1 collection of an older audit store goes on in ``clear``).

    Raises:
        CollectionModeError: the mode chosen would switch between clear and private.
    """
    settings = services.settings
    chosen = "publish_mode" in settings.model_fields_set
    return services.store.collections.use(
        name, settings.publish_mode, chain_namer=chain_for, mode_is_default=not chosen
    )


def record_batch(
    summary: RunSummary,
    services: Services,
    *,
    source: str,
    docs: Sequence[DocumentIn],
    kind: NotarizationKind = "document",
) -> list[int]:
    """Record a batch of documents and queue those the chain does not hold yet, one
    notarization of ``kind`` each (``document``: clear; ``commitment``: private).

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
        kind=kind,
    )
    notarized = services.store.notarizations.notarized_at(
        summary.chain_id, [d.sha256 for d in docs]
    )
    summary.add_recorded(docs, ids, notarized)
    return ids


class Recorder:
    """Records a run's documents window by window and publishes them as it goes.

    By the collection's mode: ``clear`` and ``entry`` queue one notarization per new
    document (version-1 entry, or commitment entry) and publish each window's at once;
    ``aggregate`` keeps the run's new documents (id and hash only) until
    ``aggregate_batch_size`` of them are waiting, then records them as one batch (tree,
    batch row and members in one transaction) and publishes its entry. ``flush`` makes a
    batch of what is left (smaller; one document is a batch too). Memory: at most one
    batch's documents, never the run's.

    Documents recorded but not yet in a batch when a run dies are found new again by the
    next run over the same source, and batched then.
    """

    def __init__(
        self,
        summary: RunSummary,
        services: Services,
        collection: CollectionRecord,
        *,
        source: str,
    ) -> None:
        self._summary, self._services = summary, services
        self._collection, self._source = collection, source
        self._waiting: dict[str, int] = {}  # hex SHA-256 -> document id, in arrival order
        self._copies: Counter[str] = Counter()  # waiting hashes seen again in this run

    @property
    def settled(self) -> bool:
        """True when every document added so far is queued (none waits for a batch)."""
        return not self._waiting

    def add(self, docs: Sequence[DocumentIn]) -> None:
        """Record one window of hashed documents; publish what is ready."""
        if not docs:
            return
        if self._collection.mode != "aggregate":
            kind: NotarizationKind = (
                "document" if self._collection.mode == "clear" else "commitment"
            )
            ids = record_batch(
                self._summary, self._services, source=self._source, docs=docs, kind=kind
            )
            self._publish(ids)
            return
        new, _skipped = record_new_documents(
            self._services.store,
            source=self._source,
            chain_id=self._collection.chain_id,
            docs=quote(docs),
        )
        fresh = {sha.lower(): doc_id for doc_id, sha in new}
        known: list[DocumentIn] = []
        for doc in docs:
            sha = doc.sha256.lower()
            if sha not in fresh:
                known.append(doc)
            elif sha in self._waiting:  # seen earlier in this run, not in a batch yet
                self._summary.repeated_in_run += 1
                self._copies[sha] += 1
            else:
                self._waiting[sha] = fresh[sha]
        if known:
            store = self._services.store
            notarized = store.notarizations.notarized_at(
                self._collection.chain_id, [d.sha256 for d in known]
            )
            self._summary.add_recorded(known, [], notarized)
        size = self._services.settings.aggregate_batch_size
        while len(self._waiting) >= size:
            self._batch(size)

    def flush(self) -> None:
        """Record and publish the documents still waiting as one (smaller) batch."""
        if self._waiting:
            self._batch(len(self._waiting))

    def _batch(self, size: int) -> None:
        shas = list(islice(self._waiting, size))
        docs = [(self._waiting.pop(sha), sha) for sha in shas]
        added = record_aggregate(self._services.store, self._collection, quote(docs))
        batch_id = None if added is None else added[0]
        copies = {sha: 1 + self._copies.pop(sha, 0) for sha in shas}
        if added is not None and added[1] == len(shas):  # every one is this batch's
            batch_of = dict.fromkeys(shas, added[0])
        else:  # another worker aggregated some first: look up whose batch each is in
            found = self._services.store.notarizations.notarized_at(self._collection.chain_id, shas)
            batch_of = {sha: nid for sha, (nid, _created_at) in found.items()}
        self._summary.add_batched(copies, batch_id, batch_of)
        if batch_id is not None:
            self._publish([batch_id])

    def _publish(self, ids: Sequence[int]) -> None:
        if ids:
            # Only what is still pending: a concurrent run may have published them meanwhile
            # (posting again would only cost entry credits).
            rows = [
                r for r in self._services.store.notarizations.by_ids(ids) if r.stage == "pending"
            ]
            self._summary.timed(
                "publish", lambda: publish_rows_now(self._summary, self._services, rows)
            )


def publish_rows_now(
    summary: RunSummary,
    services: Services,
    rows: Sequence[NotarizationRow],
    *,
    recheck: frozenset[int] = frozenset(),
) -> None:
    """Publish ``rows`` (``pending``; ``recheck`` ids looked up first) in pages of
    ``batch_size``; count the outcome into ``summary``: this run's rows in ``published``,
    an earlier or concurrent run's in ``published_for_other_runs`` (both in documents: a
    batch counts its members); the entries posted, and their entry credits, in
    ``entries_written`` and ``entry_credits``."""
    settings = services.settings
    own, others = PublishOutcome(), PublishOutcome()
    for page in chunks(rows, settings.batch_size):
        # Published in two task runs, so that each outcome counts only its own rows.
        for part, total in (
            ([r for r in page if summary.is_own(r.id)], own),
            ([r for r in page if not summary.is_own(r.id)], others),
        ):
            if not part:
                continue
            outcome = publish_batch(
                services.store,
                services.api,
                quote(part),  # not walked by Prefect (see record_batch)
                recheck_ids=recheck & {r.id for r in part},
                concurrency=settings.publish_concurrency,
            )
            total.add(outcome)
    summary.published += own.published + own.already_accepted
    summary.published_for_other_runs += others.published + others.already_accepted
    summary.entries_written += own.entries_written + others.entries_written
    summary.entry_credits += own.entry_credits + others.entry_credits
    for total in (own, others):
        summary.publish_failed += total.failed + total.retryable_errors
        for message in total.errors:
            summary.note(message)


def publish_pending(summary: RunSummary, services: Services, collection: str | None) -> None:
    """Publish every ``pending`` notarization of ``collection`` (``None``: of every
    collection), page by page.

    What is still ``pending`` here was left by an earlier run (interrupted, or the
    publishing API unreachable), queued by a concurrent one, or failed to publish in this
    one (a ``Recorder`` publishes its rows as it records them). Such a row may have been
    posted already, so each is looked up by entry hash before it is posted. Rows of this
    run count in ``summary.published``, the others in ``published_for_other_runs``.
    """
    after_id = 0
    while True:
        rows = services.store.notarizations.pending(
            stage_below="published",
            collection=collection,
            limit=services.settings.batch_size,
            after_id=after_id,
        )
        if not rows:
            break
        after_id = rows[-1].id
        publish_rows_now(summary, services, rows, recheck=frozenset(r.id for r in rows))


@contextmanager
def ledger_followed(
    summary: RunSummary, services: Services, collection: CollectionRecord, *, enabled: bool
) -> Iterator[None]:
    """While the ``with`` block records and publishes, move the run's entries to ``ledger``
    as directory blocks hold them (``tasks.ledger_follow.LedgerFollower``, a thread), so
    that ``wait_ledger`` afterwards has only the last blocks' entries left. Nothing is
    started when ``enabled`` is False (the run does not wait for ``ledger``), nor for an
    in-memory audit store (one connection: the thread's writes would share the run's
    transactions)."""
    if not enabled or services.store.one_connection:
        yield
        return
    follower = LedgerFollower(
        services.store,
        services.node,
        collection=collection.name,
        chain_id=collection.chain_id,
        after_id=services.store.notarizations.newest_id(),
    )
    with follower:
        yield
    if follower.error is not None:
        summary.note(f"ledger stage during the run stopped early ({follower.error})")


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
