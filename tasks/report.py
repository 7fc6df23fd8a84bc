"""Audit reports from the audit store (plain pandas functions, no Prefect).

Pipeline of functions (each usable alone)::

    load_report_data(store, collection=, since=, until=)   -> ReportData (records, no pandas)
    reverify_receipts(proofs, fetch_dblock, sample=, seed=) -> DataFrame (REVERIFY_COLUMNS)
    build_report(data, now=, thresholds=, reverification=)  -> Report (frames + summary)
    tasks.report_output.write_report(report, out_dir)      -> {name: path} (CSV, JSON, HTML)

``load_report_data`` and ``parse_moment`` are in ``tasks.report_inputs``,
``reverify_receipts`` and ``ReceiptSample`` in ``tasks.report_reverify`` (both imported
here too). ``build_report`` holds every document of ``data``; ``tasks.report_stream.stream_report``
makes the same files from the store page by page in bounded memory. Both feed pages of
records to one ``ReportBuilder`` (the only place any figure is computed), which keeps
counts, the stage durations (8 bytes per document and stage, for the exact medians and
95th percentiles), the first rows of ``documents`` and ``problems`` (the HTML shows
2,000 of each; the CSV files have every row) and a seeded reservoir sample of receipts
(``ReceiptSample``) for the re-verification, the same for the same records and seed
either way.

Frames of a ``Report`` (column lists are constants; CSV headers follow them exactly):

* ``documents``  one row per notarization: document, stage, per-stage status
  (``done | skipped | waiting | overdue | failed | not reached``), time reached per
  stage, seconds each stage took, receipt and anchor verification, and the directory
  block's independent timestamps as recorded so far (``rfc3161_timestamps``: each TSA's
  name and genTime; ``opentimestamps``: ``pending`` or ``Bitcoin block N``);
* ``latencies``  per stage: count, mean, median, p95 and max seconds (``latency_table``);
* ``problems``   failed, overdue, ledger rows without a receipt, re-verification rejects;
* ``reverification`` the re-verified sample of stored receipts;
* ``batches``    one row per batch entry of an aggregating collection: entry, tree size,
  members, stage (its documents are rows of ``documents`` at the batch's stage, with the
  batch's notarization id).

Stage times come from ``stage_events`` (first event of each stage; ``pending`` falls back
to the row's ``created_at``). A stage's time is measured from the previous stage reached,
so a skipped ``multi_az`` makes ``ledger_s`` count from ``published``. Times are UTC; in
the CSV and HTML they are ISO 8601 strings ending in ``Z``; durations are seconds.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from connectors.audit import (
    ALL_STAGES,
    STAGE_ORDER,
    AnchorRecord,
    BatchRecord,
    BlockTimestamps,
    NotarizationRow,
    ProofRecord,
    StageEventRecord,
)

# The inputs and the re-verification live in their own modules; their names are part of
# this module's surface (``tasks.report.parse_moment`` and so on).
from tasks.report_inputs import OverdueThresholds as OverdueThresholds
from tasks.report_inputs import ReportData as ReportData
from tasks.report_inputs import all_batches as all_batches
from tasks.report_inputs import as_utc
from tasks.report_inputs import load_report_data as load_report_data
from tasks.report_inputs import parse_moment as parse_moment
from tasks.report_reverify import REVERIFY_COLUMNS as REVERIFY_COLUMNS
from tasks.report_reverify import DblockFetcher as DblockFetcher
from tasks.report_reverify import ReceiptSample as ReceiptSample
from tasks.report_reverify import reverify_chosen as reverify_chosen
from tasks.report_reverify import reverify_receipts as reverify_receipts

STAGES = STAGE_ORDER[1:]  # published, multi_az, ledger, anchor: the stages a row reaches
LATENCY_STAGES = (*STAGES, "total")
TIME_COLUMN = {"published": "published_at", "multi_az": "multi_az_at", "ledger": "ledger_at"}
TIME_COLUMN["anchor"] = "anchored_at"

DOCUMENT_COLUMNS: tuple[str, ...] = (
    "notarization_id", "collection", "source", "path", "sha256", "size_bytes", "chain_id",
    "entry_hash", "stage", "status_published", "status_multi_az", "status_ledger",
    "status_anchor", "created_at", "published_at", "multi_az_at", "ledger_at", "anchored_at",
    "published_s", "multi_az_s", "ledger_s", "anchor_s", "total_s", "attempts", "error",
    "dblock_height", "dblock_keymr", "receipt_verified_at", "anchor_transaction_id",
    "anchor_block_hash", "anchor_confirmations", "anchor_verified_at", "overdue",
    "waiting_for", "waited_s", "rfc3161_timestamps", "opentimestamps",
)  # fmt: skip
LATENCY_COLUMNS = ("stage", "count", "mean_s", "median_s", "p95_s", "max_s")
PROBLEM_COLUMNS = (
    "notarization_id", "collection", "path", "sha256", "stage", "problem", "detail",
    "waited_s", "limit_s",
)  # fmt: skip
BATCH_COLUMNS = (
    "batch_id", "collection", "root", "size", "members", "entry_hash", "stage", "dblock_height",
)  # fmt: skip
REPORT_FILES = {
    "documents": "documents.csv",
    "batches": "batches.csv",
    "latencies": "stage_latencies.csv",
    "problems": "problems.csv",
    "reverification": "reverification.csv",
    "summary": "summary.json",
    "html": "report.html",
}


# -- frames -------------------------------------------------------------------------------


@dataclass
class Report:
    """Frames and summary of one report (see the module docstring).

    ``documents`` and ``problems`` are every row, or, from ``stream_report``, the first
    rows only: then ``documents_csv`` and ``problems_csv`` are the files that hold them
    all and ``write_report`` copies them. ``summary["documents"]`` and ``problem_count``
    count every row; ``reached``: stage -> documents that reached it.
    """

    documents: pd.DataFrame
    latencies: pd.DataFrame
    problems: pd.DataFrame
    reverification: pd.DataFrame
    summary: dict[str, Any] = field(default_factory=dict)
    batches: pd.DataFrame = field(default_factory=lambda: _empty(BATCH_COLUMNS))
    reached: dict[str, int] = field(default_factory=dict)
    problem_count: int = 0
    documents_csv: Path | None = None
    problems_csv: Path | None = None


class Page(NamedTuple):
    """The rows one page of records adds to ``documents`` and to ``problems``."""

    documents: pd.DataFrame
    problems: pd.DataFrame


def build_report(
    data: ReportData,
    *,
    now: datetime,
    thresholds: OverdueThresholds | None = None,
    reverification: pd.DataFrame | None = None,
) -> Report:
    """All frames and the summary; ``now`` (aware) decides what is overdue."""
    builder = ReportBuilder(now=now, thresholds=thresholds)
    builder.add(data.proofs, data.events, data.anchors, data.timestamps)
    # A rejected receipt's problem row names its (first) document.
    rows = {p.notarization.id: p.notarization for p in reversed(data.proofs)}
    return builder.finish(
        reverification,
        rows=rows,
        batches=data.batches,
        collection=data.collection,
        since=data.since,
        until=data.until,
    )


class ReportBuilder:
    """A ``Report`` made from pages of records, oldest first, in bounded memory.

    Kept per document: its stage durations (``array('d')``, 8 bytes each, for the exact
    median and p95); besides that only counts, the first ``keep_rows`` document rows and
    problem rows (all when ``None``), the ids of batches met and a ``ReceiptSample`` of
    ``sample`` receipts (seeded with ``seed``). The caller writes out each ``Page``.
    """

    def __init__(
        self,
        *,
        now: datetime,
        thresholds: OverdueThresholds | None = None,
        keep_rows: int | None = None,
        sample: int = 0,
        seed: int = 0,
    ) -> None:
        self.now = now
        self.limits = thresholds or OverdueThresholds()
        self.keep_rows = keep_rows
        self.receipts = ReceiptSample(sample, seed=seed)
        self.count = 0
        self.stages: Counter[str] = Counter()
        self.reached: Counter[str] = Counter()
        self.receipts_stored = 0
        self.anchors_stored = 0
        self.durations = {stage: array("d") for stage in LATENCY_STAGES}
        self.problem_kinds: Counter[str] = Counter()
        self.batch_ids: set[int] = set()
        # Rows, not page frames: one frame of them infers each column's type over all the
        # kept rows, as build_report always did (concatenated pages could differ).
        self._kept: list[dict[str, Any]] = []
        self._kept_problems: list[dict[str, Any]] = []
        self.rejected: list[dict[str, Any]] = []  # problem rows of rejected receipts (finish)

    def add(
        self,
        proofs: Sequence[ProofRecord],
        events: Mapping[int, Sequence[StageEventRecord]],
        anchors: Mapping[int, AnchorRecord],
        timestamps: Mapping[int, BlockTimestamps] | None = None,
    ) -> Page:
        """Take the next page: its records with the stage events and anchors of their ids
        and the timestamps of their directory blocks (by height).

        Returns:
            the page's ``documents`` rows (``DOCUMENT_COLUMNS``) and problem rows
            (``PROBLEM_COLUMNS``), to write out.
        """
        rows = [
            _document_row(
                p,
                events.get(p.notarization.id, ()),
                anchors.get(p.notarization.id),
                _block_stamps(timestamps, p.notarization.dblock_height),
                now=self.now,
                limits=self.limits,
            )
            for p in proofs
        ]
        page = pd.DataFrame(rows, columns=list(DOCUMENT_COLUMNS))
        self.count += len(page)
        self.stages.update(page["stage"])
        for stage in STAGES:
            self.reached[stage] += int(page[TIME_COLUMN[stage]].notna().sum())
        self.receipts_stored += int(page["receipt_verified_at"].notna().sum())
        self.anchors_stored += int(page["anchor_verified_at"].notna().sum())
        for name, values in self.durations.items():
            values.extend(_seconds(page[f"{name}_s"]))
        problems = document_problems(page, limits=self.limits)
        self._take_problems(problems)
        self.batch_ids.update(p.notarization.id for p in proofs if p.notarization.is_member)
        self.receipts.add(proofs)
        self._kept += rows[: self._room(self._kept, len(rows))]
        return Page(page, pd.DataFrame(problems, columns=list(PROBLEM_COLUMNS)))

    def _room(self, kept: list[dict[str, Any]], offered: int) -> int:
        return offered if self.keep_rows is None else max(self.keep_rows - len(kept), 0)

    def _take_problems(self, problems: list[dict[str, Any]]) -> None:
        self.problem_kinds.update(p["problem"] for p in problems)
        self._kept_problems += problems[: self._room(self._kept_problems, len(problems))]

    def finish(
        self,
        reverification: pd.DataFrame | None,
        *,
        rows: Mapping[int, NotarizationRow],
        batches: Sequence[BatchRecord] = (),
        collection: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        documents_csv: Path | None = None,
        problems_csv: Path | None = None,
    ) -> Report:
        """The report, given the re-verification of the sample (``None``: none). Call once.

        Args:
            rows: notarization rows by id, at least those of the re-verified receipts
                (a rejection's problem row names the document; ``rejected_problems``).
            batches: the batches to list (those of ``batch_ids``).
            documents_csv, problems_csv: the files that already hold every document row
                and every problem row (the rejections last), if any.
        """
        checked = reverification if reverification is not None else _empty(REVERIFY_COLUMNS)
        self.rejected = rejected_problems(checked, rows)
        self._take_problems(self.rejected)
        report = Report(
            pd.DataFrame(self._kept, columns=list(DOCUMENT_COLUMNS)),
            latency_table(self.durations),
            pd.DataFrame(self._kept_problems, columns=list(PROBLEM_COLUMNS)),
            checked,
            batches=_batch_frame(batches),
            reached={stage: self.reached[stage] for stage in STAGES},
            problem_count=self.problem_kinds.total(),
            documents_csv=documents_csv,
            problems_csv=problems_csv,
        )
        report.summary = self._summary(report, collection, since, until)
        return report

    def _summary(
        self,
        report: Report,
        collection: str | None,
        since: datetime | None,
        until: datetime | None,
    ) -> dict[str, Any]:
        kinds = self.problem_kinds
        status = report.reverification["status"].value_counts().to_dict()
        latency = report.latencies.set_index("stage")
        return {
            "collection": collection,
            "since": iso_utc(since),
            "until": iso_utc(until),
            "generated_at": iso_utc(self.now),
            "documents": self.count,
            "batches": len(report.batches),
            "stages": {s: self.stages[s] for s in ALL_STAGES},
            "failed": int(kinds.get("failed", 0)),
            "overdue": int(kinds.get("overdue", 0)),
            "without_receipt": int(kinds.get("no_receipt", 0)),
            "receipts_stored": self.receipts_stored,
            "anchors_stored": self.anchors_stored,
            "reverified": len(report.reverification),
            "reverify_ok": int(status.get("ok", 0)),
            "reverify_rejected": int(status.get("rejected", 0)),
            "reverify_unavailable": int(status.get("unavailable", 0)),
            "latency_s": {
                s: {
                    "count": int(latency.at[s, "count"]),
                    "median": plain_number(latency.at[s, "median_s"]),
                    "p95": plain_number(latency.at[s, "p95_s"]),
                }
                for s in LATENCY_STAGES
            },
        }


def _batch_frame(batches: Sequence[BatchRecord]) -> pd.DataFrame:
    rows = [
        (b.id, b.collection, b.root, b.size, b.members, b.entry_hash, b.stage, b.dblock_height)
        for b in batches
    ]
    return pd.DataFrame(rows, columns=list(BATCH_COLUMNS))


def _document_row(
    proof: ProofRecord,
    events: Sequence[StageEventRecord],
    anchor: AnchorRecord | None,
    stamps: BlockTimestamps | None,
    *,
    now: datetime,
    limits: OverdueThresholds,
) -> dict[str, Any]:
    row = proof.notarization
    reached = _reached(row, events)
    entered = reached.get(row.stage) or row.updated_at
    limit = limits.limit_s(row.stage)
    waited = (now - entered).total_seconds() if row.stage not in ("anchor", "failed") else None
    overdue = bool(limit is not None and waited is not None and waited > limit)
    out: dict[str, Any] = {name: getattr(row, name, None) for name in DOCUMENT_COLUMNS}
    out |= {"notarization_id": row.id, "overdue": overdue, "waited_s": waited}
    out |= {"waiting_for": _next_stage(row.stage), "created_at": reached["pending"]}
    out |= {TIME_COLUMN[s]: reached.get(s) for s in STAGES}
    out |= _durations(reached) | _statuses(row.stage, reached, overdue=overdue)
    out |= _verification(proof, anchor)
    out["rfc3161_timestamps"] = stamps.rfc3161_text() if stamps else ""
    out["opentimestamps"] = stamps.ots_text() if stamps else ""
    return out


def _block_stamps(
    timestamps: Mapping[int, BlockTimestamps] | None, height: int | None
) -> BlockTimestamps | None:
    return None if timestamps is None or height is None else timestamps.get(height)


def _reached(row: NotarizationRow, events: Sequence[StageEventRecord]) -> dict[str, datetime]:
    """First time each stage was reached (events first, the row's columns as fallback)."""
    times: dict[str, datetime] = {}
    for event in events:
        if event.stage in ALL_STAGES:
            times.setdefault(event.stage, event.at)
    times.setdefault("pending", row.created_at)
    for stage, column in TIME_COLUMN.items():
        value = getattr(row, column)
        if value is not None:
            times.setdefault(stage, value)
    return times


def _next_stage(stage: str) -> str:
    if stage in ("anchor", "failed"):
        return ""
    return STAGE_ORDER[STAGE_ORDER.index(stage) + 1]


def _durations(reached: Mapping[str, datetime]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    start = previous = reached["pending"]
    for stage in STAGES:
        at = reached.get(stage)
        out[f"{stage}_s"] = None if at is None else (at - previous).total_seconds()
        previous = previous if at is None else at
    progressed = any(stage in reached for stage in STAGES)
    out["total_s"] = (previous - start).total_seconds() if progressed else None
    return out


def _statuses(stage: str, reached: Mapping[str, datetime], *, overdue: bool) -> dict[str, str]:
    done = [i for i, s in enumerate(STAGES) if s in reached]
    last = max(done, default=-1)
    blocked = "failed" if stage == "failed" else "overdue" if overdue else "waiting"
    out = {}
    for i, s in enumerate(STAGES):
        status = "done" if s in reached else "skipped" if i < last else "not reached"
        out[f"status_{s}"] = blocked if i == last + 1 else status
    return out


def _verification(proof: ProofRecord, anchor: AnchorRecord | None) -> dict[str, Any]:
    receipt = proof.receipt
    return {
        "receipt_verified_at": receipt.verified_at if receipt else None,
        "anchor_transaction_id": anchor.transaction_id if anchor else None,
        "anchor_block_hash": anchor.anchor_block_hash if anchor else None,
        "anchor_confirmations": anchor.confirmations if anchor else None,
        "anchor_verified_at": anchor.verified_at if anchor else None,
    }


def latency_table(durations: Mapping[str, Sequence[float]]) -> pd.DataFrame:
    """Per stage of ``LATENCY_STAGES``: count, mean, median, p95 (linear interpolation)
    and max of ``durations[stage]`` (seconds), rounded to the millisecond; ``None`` but
    the count for a stage no document completed."""
    rows = []
    for stage in LATENCY_STAGES:
        values = pd.Series(durations[stage], dtype="float64")
        stats = [values.mean(), values.median(), values.quantile(0.95), values.max()]
        rows.append(
            [stage, len(values), *(round(float(v), 3) if len(values) else None for v in stats)]
        )
    return pd.DataFrame(rows, columns=list(LATENCY_COLUMNS))


def _seconds(column: pd.Series) -> array[float]:
    """The numbers of a duration column, missing values dropped, in row order."""
    values = pd.to_numeric(column, errors="coerce").dropna().to_numpy(dtype="float64")
    return array("d", values.tobytes())


def document_problems(
    documents: pd.DataFrame, *, limits: OverdueThresholds
) -> list[dict[str, Any]]:
    """Problem rows of ``documents`` rows: failed, overdue, at ledger without a receipt."""
    rows = []
    for doc in documents.itertuples(index=False):
        base = _problem_base(doc.notarization_id, doc)
        if doc.stage == "failed":
            rows.append(base | {"problem": "failed", "detail": doc.error or ""})
        elif doc.overdue:
            detail = f"waiting for {doc.waiting_for}"
            limit = limits.limit_s(doc.stage)
            rows.append(
                base
                | {
                    "problem": "overdue",
                    "detail": detail,
                    "waited_s": doc.waited_s,
                    "limit_s": limit,
                }
            )
        if doc.stage in ("ledger", "anchor") and pd.isna(doc.receipt_verified_at):
            rows.append(base | {"problem": "no_receipt", "detail": "no verified receipt stored"})
    return rows


def rejected_problems(
    reverification: pd.DataFrame, rows: Mapping[int, Any]
) -> list[dict[str, Any]]:
    """A ``receipt_rejected`` problem row per rejected re-verification whose notarization
    is in ``rows`` (id -> a row with ``collection``, ``path``, ``sha256``, ``stage``)."""
    out = []
    for check in reverification.itertuples(index=False):
        doc = rows.get(check.notarization_id)
        if check.status == "rejected" and doc is not None:
            base = _problem_base(check.notarization_id, doc)
            out.append(base | {"problem": "receipt_rejected", "detail": check.message})
    return out


def _problem_base(notarization_id: int, doc: Any) -> dict[str, Any]:
    base = {"notarization_id": notarization_id, "collection": doc.collection}
    base |= {"path": doc.path, "sha256": doc.sha256}
    return base | {"stage": doc.stage}


def _empty(columns: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})


def plain_number(value: Any) -> float | None:
    """A JSON-safe number: ``None`` for missing values, else a Python float."""
    return None if value is None or pd.isna(value) else float(value)


def iso_utc(moment: Any) -> str | None:
    """A timestamp as ISO 8601 UTC ending in ``Z``; ``None`` for missing values."""
    if moment is None or pd.isna(moment):
        return None
    return as_utc(pd.Timestamp(moment).to_pydatetime()).isoformat().replace("+00:00", "Z")
