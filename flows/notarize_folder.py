"""The ``notarize_folder`` flow: scan, hash, record, publish, wait for ``ledger``, verify.

Orchestration only; the steps are the batch tasks of ``tasks.steps``. Re-running it on the
same folder publishes nothing new: documents whose hash the collection's chain already
holds are skipped, and rows an interrupted run left behind are finished.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact

from connectors.audit_store import AuditStore, DocumentIn
from connectors.folder_source import ScanEntry, scan, source_name
from connectors.node import NodeClient
from connectors.publishing import PublishingClient
from flows.settings import PipelineSettings
from tasks.documents import collection_chain_id
from tasks.publish import PublishOutcome, ensure_collection_chain
from tasks.steps import (
    StagePending,
    backoff_delays,
    hash_batch,
    publish_batch,
    record_documents,
    wait_for_ledger,
)

T = TypeVar("T")


@dataclass
class RunSummary:
    """What a run did, with wall time per stage in seconds."""

    folder: str
    collection: str
    chain_id: str
    files_seen: int = 0
    hash_errors: int = 0
    bytes_hashed: int = 0
    skipped_known: int = 0
    queued: int = 0
    published: int = 0
    publish_failed: int = 0
    reached_ledger: int = 0
    receipts_verified: int = 0
    receipts_rejected: int = 0
    still_waiting: int = 0
    stage_seconds: dict[str, float] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class _Timer:
    def __init__(self, summary: RunSummary) -> None:
        self.summary = summary

    def run(self, stage: str, fn: Callable[[], T]) -> T:
        start = time.perf_counter()
        try:
            return fn()
        finally:
            self.summary.stage_seconds[stage] = round(time.perf_counter() - start, 3)


@flow(name="notarize-folder", log_prints=False, validate_parameters=False)
def notarize_folder(
    folder: str,
    collection: str | None = None,
    settings: PipelineSettings | None = None,
    wait_for_ledger_stage: bool = True,
) -> dict[str, Any]:
    """Notarize every regular file under ``folder`` into the chain of ``collection``.

    Args:
        folder: the folder to notarize (recursive; symlinks are not followed).
        collection: collection name; default the folder's absolute path.
        settings: pipeline settings (services, audit store, batch sizes).
        wait_for_ledger_stage: wait (with retries and back-off) until every entry is in a
            directory block and its receipt verified.

    Returns:
        ``RunSummary.as_dict()``.
    """
    settings = settings or PipelineSettings()
    root = Path(folder).resolve()
    name = collection or str(root)
    summary = RunSummary(str(root), name, collection_chain_id(name))
    store = AuditStore(settings.audit_url)
    run_id = store.start_run("notarize_folder", parameters={"folder": str(root), "collection": name})
    key = settings.resolve_api_key()
    timeout = settings.http_timeout_s
    with PublishingClient(
        settings.api_url, key, timeout_s=timeout, max_connections=settings.publish_concurrency
    ) as api, NodeClient(settings.node_url, timeout_s=timeout) as node:
        try:
            _run(summary, store=store, api=api, node=node, settings=settings, wait=wait_for_ledger_stage)
        finally:
            store.finish_run(run_id, counts=summary.as_dict(), status="completed")
            store.close()
    _publish_artifact(summary)
    return summary.as_dict()


def _run(
    summary: RunSummary,
    *,
    store: AuditStore,
    api: PublishingClient,
    node: NodeClient,
    settings: PipelineSettings,
    wait: bool,
) -> None:
    log = get_run_logger()
    timer = _Timer(summary)
    root = Path(summary.folder)
    files = timer.run("scan", lambda: list(scan(root)))
    summary.files_seen = len(files)
    log.info("found %d files under %s", len(files), root)
    chain_id = timer.run("chain", lambda: ensure_collection_chain(api, summary.collection))
    new_ids = timer.run("hash", lambda: _hash_and_record(summary, store, files, settings))
    timer.run("publish", lambda: _publish(summary, store, api, settings, frozenset(new_ids)))
    if wait:
        timer.run("ledger", lambda: _wait_ledger(summary, store, node, settings))
    counts = store.summary(summary.collection)
    summary.reached_ledger = counts.get("ledger", 0) + counts.get("anchor", 0)
    summary.still_waiting = sum(counts.get(s, 0) for s in ("pending", "published", "multi_az"))
    assert chain_id == summary.chain_id


def _hash_and_record(
    summary: RunSummary, store: AuditStore, files: list[ScanEntry], settings: PipelineSettings
) -> list[int]:
    batches = list(_chunks(files, settings.batch_size))
    futures = [hash_batch.submit(b, workers=settings.hash_workers) for b in batches]
    source = source_name(summary.folder)
    new_ids: list[int] = []
    for batch, future in zip(batches, futures, strict=True):
        docs = []
        for entry, result in zip(batch, future.result(), strict=True):
            if result.ok:
                docs.append(DocumentIn(entry.relative_path, result.sha256, result.size_bytes))
                summary.bytes_hashed += result.size_bytes
            else:
                summary.hash_errors += 1
                _note(summary, f"{entry.relative_path}: {result.error}")
        if docs:
            ids, skipped = record_documents(
                store, source=source, collection=summary.collection, chain_id=summary.chain_id, docs=docs
            )
            new_ids.extend(ids)
            summary.skipped_known += skipped
    summary.queued = len(new_ids)
    return new_ids


def _publish(
    summary: RunSummary,
    store: AuditStore,
    api: PublishingClient,
    settings: PipelineSettings,
    new_ids: frozenset[int],
) -> None:
    total = PublishOutcome()
    after_id = 0
    while True:
        rows = store.pending(
            stage_below="published", collection=summary.collection, limit=settings.batch_size, after_id=after_id
        )
        if not rows:
            break
        after_id = rows[-1].id
        recheck = frozenset(r.id for r in rows if r.id not in new_ids)
        outcome = publish_batch(
            store, api, rows, recheck_ids=recheck, concurrency=settings.publish_concurrency
        )
        total.add(outcome)
    summary.published = total.published + total.already_accepted
    summary.publish_failed = total.failed + total.retryable_errors
    for message in total.errors:
        _note(summary, message)


def _wait_ledger(
    summary: RunSummary, store: AuditStore, node: NodeClient, settings: PipelineSettings
) -> None:
    delays = backoff_delays(settings.ledger_wait_s)
    waiter = wait_for_ledger.with_options(retries=len(delays), retry_delay_seconds=delays)
    state = waiter(store, node, collection=summary.collection, return_state=True)
    if state.is_completed():
        outcome = state.result()
        summary.receipts_rejected = outcome.rejected
    else:
        try:
            state.result()
        except StagePending as exc:
            _note(summary, f"{exc}; `notary collect` finishes them later")
    summary.receipts_verified = _verified_count(store, summary.collection)


def _verified_count(store: AuditStore, collection: str) -> int:
    return sum(1 for p in store.proofs(collection=collection, limit=10**9) if p.receipt is not None)


def _note(summary: RunSummary, message: str) -> None:
    if len(summary.errors) < 20:
        summary.errors.append(message)


def _publish_artifact(summary: RunSummary) -> None:
    rows = "\n".join(
        f"| {k} | {v} |" for k, v in summary.as_dict().items() if not isinstance(v, dict | list)
    )
    stages = "\n".join(f"| {k} | {v:.2f} s |" for k, v in summary.stage_seconds.items())
    create_markdown_artifact(
        key="notarize-folder-summary",
        markdown=f"## Notarization of `{summary.folder}`\n\n| field | value |\n|---|---|\n{rows}\n\n"
        f"| stage | wall time |\n|---|---|\n{stages}\n",
        description="notarize_folder run summary",
    )
