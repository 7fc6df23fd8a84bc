"""Prefect tasks of the pipeline: thin wrappers over the plain functions of ``tasks``.

Each task handles a batch (hundreds of documents): a Prefect task run costs milliseconds,
so one run per document would bound throughput. Clients and the audit store are passed in
(never created here) and no task caches its result (``NO_CACHE``): the audit store, not
Prefect, is the record of what has been done. Retries are declared only on steps that are
safe to repeat (every step here is idempotent by document hash or entry hash).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, TypeVar

from prefect import task
from prefect.cache_policies import NO_CACHE

from connectors.anchor import AnchorClient
from connectors.audit import (
    AuditStore,
    CollectionRecord,
    DocumentIn,
    NewNotarization,
    NotarizationKind,
    NotarizationRow,
)
from connectors.folder_source import ScanEntry
from connectors.node import NodeClient
from connectors.publishing import PublishingClient
from ledger.core.proof.policy import TrustPolicy
from tasks.anchor_stage import AnchorSweep, sweep_anchor
from tasks.documents import batch_members
from tasks.errors import TaskError
from tasks.hash_process import shared_hash_process
from tasks.hashing import (
    DEFAULT_HASH_ATTEMPTS,
    HashResult,
    SmallFilesIn,
    hash_files,
    small_batch,
)
from tasks.ledger_stage import SweepOutcome, follow_ledger, sweep_ledger
from tasks.publish import PublishOutcome, publish_rows
from tasks.timestamp_sweep import TimestampSweep, sweep_timestamps

T = TypeVar("T")


class StagePending(TaskError, RuntimeError):
    """Some entries have not reached the stage yet; raised so that Prefect retries.

    Args:
        message: how many wait.
        rejected: receipts rejected by the sweeps before giving up (kept in ``args``, so
            the exception survives pickling by Prefect).
    """

    def __init__(self, message: str, rejected: int = 0) -> None:
        super().__init__(message, rejected)
        self.rejected = rejected

    def __str__(self) -> str:
        return str(self.args[0])


@task(name="hash-batch", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=1)
def hash_batch(
    entries: Sequence[ScanEntry],
    *,
    workers: int,
    root: str,
    small_files: SmallFilesIn = "process",
    attempts: int = DEFAULT_HASH_ATTEMPTS,
) -> ResultList[HashResult]:
    """SHA-256 of every file of the batch (errors captured per file).

    Each file is opened below ``root`` (the scanned folder) without following a symlink on
    the way (``tasks.hashing.hash_file_below``). The scan's sizes choose where: a batch of
    small files (``tasks.hashing.small_batch``) is hashed in the process's hashing child
    (``small_files="process"``: ``tasks.hash_process``, on another core) or on one thread
    of this process (``"thread"``), larger files on ``workers`` threads
    (``tasks.hashing.hash_files``). A file that changes while it is read is read again,
    up to ``attempts`` passes, then is the error "changed while hashed": every path
    (child, threads, a Dask worker) hashes only a version that existed.

    Returns:
        the results in ``entries`` order (``.items``; ``ResultList`` says why).
    """
    paths = [e.relative_path for e in entries]
    sizes = [e.size_bytes for e in entries]
    if small_files == "process" and small_batch(sizes):
        return ResultList(shared_hash_process().hash_files(paths, root=root, attempts=attempts))
    return ResultList(
        hash_files(paths, max_workers=workers, root=root, sizes=sizes, attempts=attempts)
    )


class ResultList(Generic[T]):
    """A list a task returns, in an object Prefect does not walk (read ``items``).

    Prefect links every element of a list a task returns to that task run, in a dict the
    flow run keeps until it ends (``link_state_to_result``): one entry per file hashed. A
    300,000-file run spent 25 s of its 420 s under cProfile walking them and kept the
    entries (~27 MB less peak RSS at 100,000 files without); a ``notary watch`` flow,
    which never ends, kept them for ever. This object is linked as one.
    """

    __slots__ = ("items",)

    def __init__(self, items: list[T]) -> None:
        self.items = items


@task(name="record-documents", cache_policy=NO_CACHE, retries=3, retry_delay_seconds=1)
def record_documents(
    store: AuditStore,
    *,
    source: str,
    collection: str,
    chain_id: str,
    docs: Sequence[DocumentIn],
    kind: NotarizationKind = "document",
) -> tuple[list[int], int]:
    """Record the documents and queue the ones this chain has not notarized, one
    notarization of ``kind`` (``document`` or ``commitment``) each.

    Returns:
        ``(ids of new notarizations, how many were skipped as already notarized)``.
    """
    new, skipped = _new_documents(store, source=source, chain_id=chain_id, docs=docs)
    rows = [NewNotarization(doc_id, collection, chain_id, sha, kind) for doc_id, sha in new]
    return store.notarizations.add(rows), skipped


@task(name="record-new-documents", cache_policy=NO_CACHE, retries=3, retry_delay_seconds=1)
def record_new_documents(
    store: AuditStore, *, source: str, chain_id: str, docs: Sequence[DocumentIn]
) -> tuple[list[tuple[int, str]], int]:
    """Record the documents; return those this chain has not notarized, to aggregate.

    Returns:
        ``([(document id, hex SHA-256)] new to the chain, distinct, in input order, how
        many were skipped as already notarized)``.
    """
    return _new_documents(store, source=source, chain_id=chain_id, docs=docs)


def _new_documents(
    store: AuditStore, *, source: str, chain_id: str, docs: Sequence[DocumentIn]
) -> tuple[list[tuple[int, str]], int]:
    doc_ids = store.notarizations.upsert_documents(source, docs)
    known = store.notarizations.known_hashes(chain_id, [d.sha256 for d in docs])
    new: dict[str, int] = {}
    for doc_id, doc in zip(doc_ids, docs, strict=True):
        if doc.sha256 not in known and doc.sha256 not in new:
            new[doc.sha256] = doc_id
    return [(doc_id, sha) for sha, doc_id in new.items()], len(docs) - len(new)


@task(name="record-batch", cache_policy=NO_CACHE, retries=3, retry_delay_seconds=1)
def record_aggregate(
    store: AuditStore, collection: CollectionRecord, docs: Sequence[tuple[int, str]]
) -> tuple[int, int] | None:
    """Aggregate documents (``(document id, hex SHA-256)``, distinct) into one batch: build
    the tree of their commitments and record the batch and its members atomically.

    Safe to retry: a batch already recorded (same root) or whose documents were all
    aggregated by another worker meanwhile is not recorded again.

    Returns:
        ``(the batch's notarization id, members recorded as its own)``, or ``None`` when
        nothing was recorded.
    """
    root, members = batch_members(collection.key, docs)
    return store.batches.record(
        collection=collection.name,
        chain_id=collection.chain_id,
        root=root,
        size=len(members),
        members=members,
    )


@task(name="publish-batch", cache_policy=NO_CACHE, retries=3, retry_delay_seconds=[1, 4, 15])
def publish_batch(
    store: AuditStore,
    client: PublishingClient,
    rows: Sequence[NotarizationRow],
    *,
    recheck_ids: frozenset[int],
    concurrency: int,
) -> PublishOutcome:
    """Publish a batch of pending notarizations (see ``tasks.publish.publish_rows``)."""
    return publish_rows(store, client, rows, recheck_ids=recheck_ids, concurrency=concurrency)


@task(name="sweep-ledger", cache_policy=NO_CACHE)
def sweep_ledger_once(
    store: AuditStore, node: NodeClient, *, collection: str | None
) -> SweepOutcome:
    """One sweep of the ``ledger`` stage (no retry: the flow decides when to sweep again)."""
    return sweep_ledger(store, node, collection=collection)


@task(name="wait-for-ledger", cache_policy=NO_CACHE)
def wait_for_ledger(
    store: AuditStore,
    node: NodeClient,
    *,
    collection: str | None,
    follow_until: float | None = None,
    raise_pending: bool = True,
) -> SweepOutcome:
    """Sweep the ``ledger`` stage; raise ``StagePending`` while entries still wait (unless
    ``raise_pending`` is False: then the outcome's ``waiting`` says so).

    With ``follow_until`` (Unix time, seconds) one run keeps sweeping at each new directory
    block until then (``tasks.ledger_stage.follow_ledger``) before it gives up; without
    it, one sweep. Declared without retries: the flow sets ``retries`` and the back-off
    delays from the configured waiting time (``with_options``), so Prefect re-runs it.
    """
    outcome = follow_ledger(store, node, collection=collection, until=follow_until)
    if outcome.waiting and raise_pending:
        raise StagePending(
            f"{outcome.waiting} entries are not in a directory block yet", outcome.rejected
        )
    return outcome


def backoff_delays(total_s: float, *, first_s: float = 0.5, cap_s: float = 15.0) -> list[float]:
    """Exponential delays (doubling from ``first_s``, at most ``cap_s``) summing to ``total_s``."""
    delays: list[float] = []
    delay, spent = first_s, 0.0
    while spent < total_s:
        step = min(delay, cap_s, total_s - spent)
        delays.append(round(step, 3))
        spent += step
        delay *= 2
    return delays


@task(name="sweep-anchor", cache_policy=NO_CACHE)
def sweep_anchor_once(
    store: AuditStore,
    node: NodeClient,
    anchor: AnchorClient,
    *,
    collection: str | None,
    policy: TrustPolicy,
) -> AnchorSweep:
    """One sweep of the ``anchor`` stage (see ``tasks.anchor_stage.sweep_anchor``)."""
    return sweep_anchor(store, node, anchor, collection=collection, policy=policy)


@task(name="sweep-timestamps", cache_policy=NO_CACHE)
def sweep_timestamps_once(
    store: AuditStore, anchor: AnchorClient, *, collection: str | None
) -> TimestampSweep:
    """One sweep of the independent timestamps (``tasks.timestamp_sweep``)."""
    return sweep_timestamps(store, anchor, collection=collection)
