"""The audit report of a whole archive in bounded memory: the store read page by page.

``stream_report`` reads the notarizations of a period ``page_size`` at a time
(``AuditStore.proofs.iter_records``) with each page's stage events and anchors, feeds the page to
a ``tasks.report.ReportBuilder`` and appends the page's rows to ``documents.csv`` and
``problems.csv``; what stays in memory is the builder's (counts, 8 bytes per document and
stage for the latency quantiles, the first ``HTML_TABLE_ROWS`` documents and problems,
the receipt sample), never the records of the whole period. ``StreamedReport.finish``
then makes the ``Report`` once the sample has been re-verified (its rejections end
``problems.csv``); ``write_report`` writes the other files. The files are those of
``build_report`` + ``write_report`` on the same store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import islice
from pathlib import Path

import pandas as pd

from connectors.audit import PROOF_PAGE_ROWS, AuditStore, BatchRecord, ProofRecord
from tasks.report import (
    PROBLEM_COLUMNS,
    REPORT_FILES,
    OverdueThresholds,
    Page,
    Report,
    ReportBuilder,
    all_batches,
)
from tasks.report_output import HTML_TABLE_ROWS, write_csv


@dataclass
class StreamedReport:
    """The documents of a report, read and written (``documents_csv``, and the problems
    found so far to ``problems_part``); what is left is to re-verify ``sampled`` and
    ``finish``."""

    builder: ReportBuilder
    batches: list[BatchRecord]
    documents_csv: Path
    problems_part: Path
    collection: str | None
    since: datetime | None
    until: datetime | None

    @property
    def sampled(self) -> list[ProofRecord]:
        """The receipts to re-verify (``tasks.report.ReceiptSample``), by id."""
        return self.builder.receipts.chosen

    def finish(self, reverification: pd.DataFrame | None) -> Report:
        """The report, given the re-verification of ``sampled`` (``None``: not done);
        completes ``problems.csv`` next to ``documents_csv``. Call once."""
        rows = {p.notarization.id: p.notarization for p in self.sampled}
        problems_csv = self.problems_part.with_name(REPORT_FILES["problems"])
        report = self.builder.finish(
            reverification,
            rows=rows,
            batches=self.batches,
            collection=self.collection,
            since=self.since,
            until=self.until,
            documents_csv=self.documents_csv,
            problems_csv=problems_csv,
        )
        rejected = self.builder.rejected  # the rejections' problem rows, made by finish
        with self.problems_part.open("a", newline="", encoding="utf-8") as handle:
            write_csv(pd.DataFrame(rejected, columns=list(PROBLEM_COLUMNS)), handle, header=False)
        self.problems_part.replace(problems_csv)
        return report


def stream_report(
    store: AuditStore,
    out_dir: Path,
    *,
    now: datetime,
    collection: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    thresholds: OverdueThresholds | None = None,
    sample: int = 50,
    seed: int = 0,
    page_size: int = PROOF_PAGE_ROWS,
) -> StreamedReport:
    """Read the notarizations created in ``[since, until)`` (of ``collection``; ``None``:
    all) and write ``out_dir/documents.csv`` (made whole under a temporary name, then
    renamed: a killed run leaves no truncated file behind).

    Args:
        now: aware; decides what is overdue.
        sample, seed: the receipts to re-verify (``tasks.report.reverify_receipts``).
        page_size: records per read (and per page of stage events and anchors).

    Raises:
        ValueError: ``page_size`` < 1.
        AuditPathError: a batch's tree cannot be rebuilt (``AuditStore.proofs.iter_records``).
    """
    builder = ReportBuilder(
        now=now, thresholds=thresholds, keep_rows=HTML_TABLE_ROWS, sample=sample, seed=seed
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / REPORT_FILES["documents"]
    partial = _part(target)
    problems = _part(out_dir / REPORT_FILES["problems"])
    found = store.proofs.iter_records(
        collection=collection, since=since, until=until, page_size=page_size
    )
    with (
        partial.open("w", newline="", encoding="utf-8") as documents_file,
        problems.open("w", newline="", encoding="utf-8") as problems_file,
    ):
        header = builder.add([], {}, {})  # the headers, also for an empty period
        write_csv(header.documents, documents_file)
        write_csv(header.problems, problems_file)
        while records := list(islice(found, page_size)):
            page = _add_page(store, builder, records)
            write_csv(page.documents, documents_file, header=False)
            write_csv(page.problems, problems_file, header=False)
    partial.replace(target)
    batches = [b for b in all_batches(store, collection) if b.id in builder.batch_ids]
    return StreamedReport(builder, batches, target, problems, collection, since, until)


def _part(path: Path) -> Path:
    """Where ``path`` is written until it is whole."""
    return path.with_name(path.name + ".part")


def _add_page(store: AuditStore, builder: ReportBuilder, records: Sequence[ProofRecord]) -> Page:
    ids = {p.notarization.id for p in records}
    anchors = store.proofs.anchors(notarization_ids=ids)
    heights = {h for p in records if (h := p.notarization.dblock_height) is not None}
    stamps = store.timestamps.of_blocks(heights)
    return builder.add(records, store.notarizations.stage_events(ids), anchors, stamps)
