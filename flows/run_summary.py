"""What a run did: ``RunSummary`` (counts, notes, wall time per stage), filled from the
audit store at the end (``finish_counts``) and attached to the flow run as an artifact
(``publish_artifact``). Shared by every source's flow.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from copy import deepcopy
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from itertools import islice
from typing import Any, TypeVar

from prefect.artifacts import create_markdown_artifact

from connectors.audit import AuditStore, DocumentIn, Stage
from connectors.folder_source import ScanEntry, display_path
from flows.id_tally import IdTally
from tasks.hashing import HashResult

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
        refused_list: path of the file listing every refused entry and why
            (``flows.refused_list``), ``None`` when none was refused.
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
        entries_written: ledger entries this run posted and got accepted (its own and
            other runs'; an entry found already accepted is not counted), plus the
            collection's chain when this run created it. In ``aggregate`` mode one entry
            serves a whole batch of documents.
        entry_credits: entry credits (EC) those entries cost: 1 per started KiB of each
            entry's payload, and 10 more for a new chain (docs/formats.md section 1.4).
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
    refused_list: str | None = None
    bytes_hashed: int = 0
    skipped_known: int = 0
    repeated_in_run: int = 0
    queued_by_other_runs: int = 0
    queued: int = 0
    published: int = 0
    published_for_other_runs: int = 0
    publish_failed: int = 0
    entries_written: int = 0
    entry_credits: int = 0
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
    _documents_of: IdTally = field(default_factory=IdTally, repr=False)
    _own: IdTally = field(default_factory=IdTally, repr=False)

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

    def add_progress(
        self,
        progress_of: Callable[[Sequence[int]], Mapping[int, tuple[Stage, bool]]],
        *,
        chunk: int = 5_000,
    ) -> None:
        """Set the ``documents_*`` counts from ``progress_of`` (``AuditStore.runs.progress``),
        asked for ``chunk`` of ``notarization_ids()`` at a time: each document counted by
        its notarization's stage. Chunked, the answer for a run of 100,000 documents is
        never in memory at once (it was the run's peak RSS, +40 MB, at its very end)."""
        in_ledger = with_receipt = waiting = failed = 0
        ids = iter(self._documents_of)
        while some := list(islice(ids, chunk)):
            for nid, (stage, has_receipt) in progress_of(some).items():
                documents = self._documents_of.count(nid)
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
            notarized: ``AuditStore.notarizations.notarized_at`` of the documents' hashes (after the
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
            self._documents_of.add(nid)

    def is_own(self, notarization_id: int) -> bool:
        """True for a notarization (or batch) this run created."""
        return notarization_id in self._own

    def add_batched(
        self,
        copies: Mapping[str, int],
        batch_id: int | None,
        batch_of: Mapping[str, int],
    ) -> None:
        """Count the documents of one batch this run recorded (aggregate mode).

        Args:
            copies: each batched hash (lowercase hex) -> how many of this run's documents
                have it (the copies after the first are already in ``repeated_in_run``).
            batch_id: the batch's notarization id, ``None`` when another worker had
                aggregated every one of them meanwhile.
            batch_of: each hash -> the notarization id of the batch it is in, after
                recording.

        A hash in this run's batch counts in ``queued``; one another worker's batch took
        first counts in ``queued_by_other_runs``.

        Raises:
            KeyError: a hash has no batch in ``batch_of``.
        """
        if batch_id is not None:
            self._own.add(batch_id)
        for sha, count in copies.items():
            nid = batch_of[sha]
            if nid == batch_id:
                self.queued += 1
            else:
                self.queued_by_other_runs += 1
            self._documents_of.add(nid, count)

    def add_chain_created(self, credits: int) -> None:
        """Count the collection's chain, created by this run for ``credits`` EC."""
        self.entries_written += 1
        self.entry_credits += credits

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
                self.note(f"{display_path(entry.relative_path)}: {result.error}")
        return docs

    def timed(self, stage: str, fn: Callable[[], T]) -> T:
        """Run ``fn`` and add its wall time to ``stage_seconds[stage]``."""
        start = time.perf_counter()
        try:
            return fn()
        finally:
            spent = time.perf_counter() - start
            self.stage_seconds[stage] = round(self.stage_seconds.get(stage, 0.0) + spent, 3)


def finish_counts(summary: RunSummary, store: AuditStore) -> None:
    """Fill the run's documents' stage counts, and the collection's totals, from the audit
    store (the record of truth)."""
    summary.add_progress(store.runs.progress)
    counts = store.runs.summary(summary.collection)
    summary.collection_totals = {
        "in_ledger": sum(counts[s] for s in LEDGER_STAGES),
        "with_receipt": store.runs.receipt_count(summary.collection),
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
