"""Audit reports from the audit store (plain pandas functions, no Prefect).

Pipeline of functions (each usable alone)::

    load_report_data(store, collection=, since=, until=)   -> ReportData (records, no pandas)
    reverify_receipts(proofs, fetch_dblock, sample=, seed=) -> DataFrame (REVERIFY_COLUMNS)
    build_report(data, now=, thresholds=, reverification=)  -> Report (frames + summary)
    tasks.report_output.write_report(report, out_dir)      -> {name: path} (CSV, JSON, HTML)

``build_report`` holds every document of ``data``; ``tasks.report_stream.stream_report``
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
  stage, seconds each stage took, receipt and anchor verification;
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

import random
import re
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from connectors.audit_proofs import proof_order
from connectors.audit_store import (
    ALL_STAGES,
    STAGE_ORDER,
    AnchorRecord,
    AuditStore,
    BatchRecord,
    NotarizationRow,
    ProofRecord,
    StageEventRecord,
)
from ledger.core.proof.steps import Step
from tasks.verify import ReceiptRejected, verify_node_receipt

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
    "waiting_for", "waited_s",
)  # fmt: skip
LATENCY_COLUMNS = ("stage", "count", "mean_s", "median_s", "p95_s", "max_s")
PROBLEM_COLUMNS = (
    "notarization_id", "collection", "path", "sha256", "stage", "problem", "detail",
    "waited_s", "limit_s",
)  # fmt: skip
REVERIFY_COLUMNS = (
    "notarization_id",
    "path",
    "entry_hash",
    "dblock_height",
    "status",
    "step",
    "message",
)
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

DblockFetcher = Callable[[int], bytes]


# -- inputs -------------------------------------------------------------------------------


@dataclass(frozen=True)
class OverdueThresholds:
    """Longest time, in seconds, a notarization may stay at a stage; ``None``: no limit.

    ``ledger_s`` is the wait for the anchor (rows at ``ledger`` are in a directory block).
    """

    pending_s: float | None = 3600.0
    published_s: float | None = 3600.0
    multi_az_s: float | None = 3600.0
    ledger_s: float | None = 6 * 3600.0

    @classmethod
    def from_mapping(cls, limits: Mapping[str, float | None]) -> OverdueThresholds:
        """From ``{stage: seconds}`` (``pending``, ``published``, ``multi_az``, ``ledger``);
        stages not named keep their default.

        Raises:
            ValueError: an unknown stage name or a negative limit.
        """
        known = {f.name.removesuffix("_s") for f in fields(cls)}
        unknown = set(limits) - known
        if unknown:
            raise ValueError(
                f"no overdue limit for stage(s) {sorted(unknown)}; use {sorted(known)}"
            )
        if any(v is not None and v < 0 for v in limits.values()):
            raise ValueError("overdue limits must be >= 0 seconds")
        return cls(**{f"{k}_s": None if v is None else float(v) for k, v in limits.items()})

    def limit_s(self, stage: str) -> float | None:
        """The limit for rows currently at ``stage`` (``None`` for anchor and failed)."""
        return getattr(self, f"{stage}_s", None)


@dataclass(frozen=True)
class ReportData:
    """What a report is made of, read from the audit store in one go."""

    proofs: list[ProofRecord]
    events: dict[int, list[StageEventRecord]]
    anchors: dict[int, AnchorRecord]
    batches: list[BatchRecord] = field(default_factory=list)
    collection: str | None = None
    since: datetime | None = None
    until: datetime | None = None


def load_report_data(
    store: AuditStore,
    *,
    collection: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> ReportData:
    """Notarizations created in ``[since, until)`` (of ``collection``) with their receipts,
    stage events and anchors."""
    proofs = store.proofs(collection=collection, since=since, until=until)
    ids = [p.notarization.id for p in proofs]
    batch_ids = {p.notarization.id for p in proofs if p.notarization.is_member}
    return ReportData(
        proofs=proofs,
        events=store.stage_events(ids),
        anchors=store.stored_anchors(notarization_ids=ids),
        batches=[b for b in all_batches(store, collection) if b.id in batch_ids],
        collection=collection,
        since=since,
        until=until,
    )


def all_batches(store: AuditStore, collection: str | None) -> list[BatchRecord]:
    """Every batch (of ``collection``; ``None``: all), by id, read a page at a time."""
    out: list[BatchRecord] = []
    while page := store.batches(collection=collection, after_id=out[-1].id if out else 0):
        out += page
    return out


def parse_moment(
    text: str | datetime | None, *, end_of_day: bool = False, now: datetime | None = None
) -> datetime | None:
    """A moment as an aware UTC datetime (naive means UTC).

    Accepted: ``YYYY-MM-DD`` (its midnight, or the next midnight with ``end_of_day``, so an
    ``until`` date includes that whole day), an ISO 8601 date-time, or a time before
    ``now`` (default: the wall clock) such as ``-7d``, ``-12h`` or ``-30m`` (for scheduled
    reports).

    Raises:
        ValueError: none of these.
    """
    if text is None or isinstance(text, datetime):
        return None if text is None else _utc(text)
    value = text.strip()
    relative = _RELATIVE.fullmatch(value)
    if relative:
        amount = float(relative.group(1)) * _UNIT_S[relative.group(2)]
        return _utc(now or datetime.now(UTC)) - timedelta(seconds=amount)
    try:
        if len(value) == 10:
            day = date.fromisoformat(value)
            moment = datetime(day.year, day.month, day.day, tzinfo=UTC)
            return moment + timedelta(days=1) if end_of_day else moment
        return _utc(datetime.fromisoformat(value.replace("Z", "+00:00")))
    except ValueError as exc:
        raise ValueError(f"not a date (YYYY-MM-DD), ISO date-time or -<n>d/h/m: {text!r}") from exc


_RELATIVE = re.compile(r"-(\d+(?:\.\d+)?)([dhm])")
_UNIT_S = {"d": 86400.0, "h": 3600.0, "m": 60.0}


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


# -- re-verification ----------------------------------------------------------------------


def reverify_receipts(
    proofs: Sequence[ProofRecord],
    fetch_dblock: DblockFetcher,
    *,
    sample: int = 50,
    seed: int = 0,
) -> pd.DataFrame:
    """Verify a random sample of stored receipts again, against the node's directory blocks.

    Per sampled receipt: (0) the stored columns and the notarization agree with the stored
    raw receipt; then ``verify_node_receipt`` (the proof steps 4 entry hash, 5 Merkle
    path, 6 directory block at the receipt's height) with the bytes
    ``fetch_dblock(height)`` returns (called once per height).

    Args:
        proofs: notarizations with their receipts (those without one are not sampled; a
            batch's receipt is sampled once, as its first member).
        fetch_dblock: height -> exact directory block bytes; raises ``LookupError`` when
            the node has no block there (a rejection); any other exception marks the
            receipt ``unavailable``.
        sample: how many receipts at most (a seeded random choice, reported by id; the
            choice of ``ReceiptSample``, the same as a streamed report's).
        seed: seed of the choice, so a report can be reproduced.

    Returns:
        one row per sampled receipt, ``REVERIFY_COLUMNS``; ``status`` is ``ok``,
        ``rejected`` (with ``step``) or ``unavailable``.
    """
    chosen = ReceiptSample(sample, seed=seed)
    chosen.add(sorted(proofs, key=proof_order))
    return reverify_chosen(chosen.chosen, fetch_dblock)


def reverify_chosen(proofs: Sequence[ProofRecord], fetch_dblock: DblockFetcher) -> pd.DataFrame:
    """``reverify_receipts`` of exactly these ``proofs`` (each with a receipt), by id."""
    blocks: dict[int, bytes | Exception] = {}
    rows = [_reverify_one(p, blocks, fetch_dblock) for p in sorted(proofs, key=_proof_id)]
    return pd.DataFrame(rows, columns=list(REVERIFY_COLUMNS))


class ReceiptSample:
    """A seeded uniform sample of at most ``size`` stored receipts from records seen in
    ``proofs`` order (by id, a batch's members by leaf), one per receipt: reservoir
    sampling, so memory holds ``size`` records however many stream by.

    Records without a receipt are not sampled; a batch's members share its receipt, so
    only its first member counts. The same records in the same order and ``seed`` give
    the same choice.
    """

    def __init__(self, size: int, *, seed: int = 0) -> None:
        self.size = max(size, 0)
        self.seen = 0  # distinct stored receipts so far
        self._random = random.Random(seed)
        self._last_id: int | None = None
        self._chosen: list[ProofRecord] = []

    def add(self, proofs: Iterable[ProofRecord]) -> None:
        """Offer the next records (in ``proofs`` order, after those offered before)."""
        for proof in proofs:
            row_id = proof.notarization.id
            if proof.receipt is None or row_id == self._last_id:
                continue
            self._last_id = row_id
            self.seen += 1
            if len(self._chosen) < self.size:
                self._chosen.append(proof)
                continue
            slot = self._random.randrange(self.seen)
            if slot < self.size:
                self._chosen[slot] = proof

    @property
    def chosen(self) -> list[ProofRecord]:
        """The sample, by notarization id."""
        return sorted(self._chosen, key=_proof_id)


def _proof_id(proof: ProofRecord) -> int:
    return proof.notarization.id


def _reverify_one(
    proof: ProofRecord, blocks: dict[int, bytes | Exception], fetch: DblockFetcher
) -> dict[str, Any]:
    row, receipt = proof.notarization, proof.receipt
    assert receipt is not None
    height = receipt.directory_block_height
    out = {"notarization_id": row.id, "path": row.path, "entry_hash": row.entry_hash}
    out |= {"dblock_height": height, "status": "ok", "step": None, "message": ""}
    mismatch = _stored_mismatch(row, receipt.raw, receipt)
    if mismatch:
        return out | {"status": "rejected", "step": 0, "message": mismatch}
    if height not in blocks:
        try:
            blocks[height] = fetch(height)
        except Exception as exc:  # recorded per receipt; the report must still be written
            blocks[height] = exc
    block = blocks[height]
    if isinstance(block, LookupError):
        message = f"the node has no directory block at height {height}"
        return out | {"status": "rejected", "step": Step.DIRECTORY_BLOCK, "message": message}
    if isinstance(block, Exception):
        return out | {"status": "unavailable", "message": f"{type(block).__name__}: {block}"}
    try:
        verify_node_receipt(receipt.raw, entry_hash=row.entry_hash or "", dblock_raw=block)
    except ReceiptRejected as exc:
        return out | {"status": "rejected", "step": exc.step, "message": str(exc)}
    return out


def _stored_mismatch(row: NotarizationRow, raw: Mapping[str, Any], receipt: Any) -> str:
    """Why the stored columns disagree with the stored raw receipt ('' when they agree)."""
    checks = [
        ("entry hash", raw.get("entry", {}).get("entryhash"), receipt.entry_hash),
        ("notarization entry hash", receipt.entry_hash, row.entry_hash),
        ("merkle branch", raw.get("merklebranch"), receipt.merkle_branch),
        ("entry block KeyMR", raw.get("entryblockkeymr"), receipt.entry_block_keymr),
        ("directory block KeyMR", raw.get("directoryblockkeymr"), receipt.directory_block_keymr),
        ("notarization directory block KeyMR", receipt.directory_block_keymr, row.dblock_keymr),
        ("height", raw.get("directoryblockheight", 0), receipt.directory_block_height),
        ("notarization height", receipt.directory_block_height, row.dblock_height),
    ]
    bad = [name for name, stored_raw, column in checks if stored_raw != column]
    return f"stored values differ from the stored receipt: {', '.join(bad)}" if bad else ""


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
    builder.add(data.proofs, data.events, data.anchors)
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

    def add(
        self,
        proofs: Sequence[ProofRecord],
        events: Mapping[int, Sequence[StageEventRecord]],
        anchors: Mapping[int, AnchorRecord],
    ) -> Page:
        """Take the next page: its records with the stage events and anchors of their ids.

        Returns:
            the page's ``documents`` rows (``DOCUMENT_COLUMNS``) and problem rows
            (``PROBLEM_COLUMNS``), to write out.
        """
        rows = [
            _document_row(
                p,
                events.get(p.notarization.id, ()),
                anchors.get(p.notarization.id),
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
        self._take_problems(rejected_problems(checked, rows))
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
    return out


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
    return _utc(pd.Timestamp(moment).to_pydatetime()).isoformat().replace("+00:00", "Z")
