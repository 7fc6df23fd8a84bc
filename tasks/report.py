"""Audit reports from the audit store (plain pandas functions, no Prefect).

Pipeline of functions (each usable alone)::

    load_report_data(store, collection=, since=, until=)   -> ReportData (records, no pandas)
    reverify_receipts(proofs, fetch_dblock, sample=, seed=) -> DataFrame (REVERIFY_COLUMNS)
    build_report(data, now=, thresholds=, reverification=)  -> Report (frames + summary)
    write_report(report, out_dir)                           -> {name: path} (CSV, JSON, HTML)

Frames of a ``Report`` (column lists are constants; CSV headers follow them exactly):

* ``documents``  one row per notarization: document, stage, per-stage status
  (``done | skipped | waiting | overdue | failed | not reached``), time reached per
  stage, seconds each stage took, receipt and anchor verification;
* ``latencies``  per stage: count, mean, median, p95 and max seconds;
* ``problems``   failed, overdue, ledger rows without a receipt, re-verification rejects;
* ``reverification`` the re-verified sample of stored receipts.

Stage times come from ``stage_events`` (first event of each stage; ``pending`` falls back
to the row's ``created_at``). A stage's time is measured from the previous stage reached,
so a skipped ``multi_az`` makes ``ledger_s`` count from ``published``. Times are UTC; in
the CSV and HTML they are ISO 8601 strings ending in ``Z``; durations are seconds.
"""

from __future__ import annotations

import base64
import html
import io
import json
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd

from connectors.audit_store import (
    ALL_STAGES,
    STAGE_ORDER,
    AnchorRecord,
    AuditStore,
    NotarizationRow,
    ProofRecord,
    StageEventRecord,
)
from tasks.verify import ReceiptRejected, verify_node_receipt

STAGES = STAGE_ORDER[1:]  # published, multi_az, ledger, anchor: the stages a row reaches
LATENCY_STAGES = (*STAGES, "total")
_TIME_COLUMN = {"published": "published_at", "multi_az": "multi_az_at", "ledger": "ledger_at"}
_TIME_COLUMN["anchor"] = "anchored_at"

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
REPORT_FILES = {
    "documents": "documents.csv",
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
    return ReportData(
        proofs=proofs,
        events=store.stage_events(ids),
        anchors=store.stored_anchors(notarization_ids=ids),
        collection=collection,
        since=since,
        until=until,
    )


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
    raw receipt; then ``verify_node_receipt`` (1 entry hash, 2 Merkle path, 3 directory
    block at the receipt's height) with the bytes ``fetch_dblock(height)`` returns
    (called once per height).

    Args:
        proofs: notarizations with their receipts (those without one are not sampled).
        fetch_dblock: height -> exact directory block bytes; raises ``LookupError`` when
            the node has no block there (a rejection); any other exception marks the
            receipt ``unavailable``.
        sample: how many receipts at most (a seeded random choice, reported by id).
        seed: seed of the choice, so a report can be reproduced.

    Returns:
        one row per sampled receipt, ``REVERIFY_COLUMNS``; ``status`` is ``ok``,
        ``rejected`` (with ``step``) or ``unavailable``.
    """
    stored = [p for p in proofs if p.receipt is not None]
    chosen = random.Random(seed).sample(stored, min(max(sample, 0), len(stored)))
    blocks: dict[int, bytes | Exception] = {}
    rows = [_reverify_one(p, blocks, fetch_dblock) for p in sorted(chosen, key=_proof_id)]
    return pd.DataFrame(rows, columns=list(REVERIFY_COLUMNS))


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
        return out | {"status": "rejected", "step": 3, "message": message}
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
    """Frames and summary of one report (see the module docstring)."""

    documents: pd.DataFrame
    latencies: pd.DataFrame
    problems: pd.DataFrame
    reverification: pd.DataFrame
    summary: dict[str, Any] = field(default_factory=dict)


def build_report(
    data: ReportData,
    *,
    now: datetime,
    thresholds: OverdueThresholds | None = None,
    reverification: pd.DataFrame | None = None,
) -> Report:
    """All frames and the summary; ``now`` (aware) decides what is overdue."""
    limits = thresholds or OverdueThresholds()
    rows = [_document_row(p, data, now=now, limits=limits) for p in data.proofs]
    documents = pd.DataFrame(rows, columns=list(DOCUMENT_COLUMNS))
    checked = reverification if reverification is not None else _empty(REVERIFY_COLUMNS)
    latencies = latency_summary(documents)
    problems = find_problems(documents, checked, limits=limits)
    report = Report(documents, latencies, problems, checked)
    report.summary = _summary(report, data, now=now)
    return report


def _document_row(
    proof: ProofRecord, data: ReportData, *, now: datetime, limits: OverdueThresholds
) -> dict[str, Any]:
    row = proof.notarization
    reached = _reached(row, data.events.get(row.id, []))
    entered = reached.get(row.stage) or row.updated_at
    limit = limits.limit_s(row.stage)
    waited = (now - entered).total_seconds() if row.stage not in ("anchor", "failed") else None
    overdue = bool(limit is not None and waited is not None and waited > limit)
    out: dict[str, Any] = {name: getattr(row, name, None) for name in DOCUMENT_COLUMNS}
    out |= {"notarization_id": row.id, "overdue": overdue, "waited_s": waited}
    out |= {"waiting_for": _next_stage(row.stage), "created_at": reached["pending"]}
    out |= {_TIME_COLUMN[s]: reached.get(s) for s in STAGES}
    out |= _durations(reached) | _statuses(row.stage, reached, overdue=overdue)
    out |= _verification(proof, data.anchors.get(row.id))
    return out


def _reached(row: NotarizationRow, events: Sequence[StageEventRecord]) -> dict[str, datetime]:
    """First time each stage was reached (events first, the row's columns as fallback)."""
    times: dict[str, datetime] = {}
    for event in events:
        if event.stage in ALL_STAGES:
            times.setdefault(event.stage, event.at)
    times.setdefault("pending", row.created_at)
    for stage, column in _TIME_COLUMN.items():
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


def latency_summary(documents: pd.DataFrame) -> pd.DataFrame:
    """Per stage (``LATENCY_STAGES``): count, mean, median, p95 and max seconds."""
    rows = []
    for stage in LATENCY_STAGES:
        values = pd.to_numeric(documents[f"{stage}_s"], errors="coerce").dropna()
        stats = [values.mean(), values.median(), values.quantile(0.95), values.max()]
        rows.append(
            [stage, len(values), *(round(float(v), 3) if len(values) else None for v in stats)]
        )
    return pd.DataFrame(rows, columns=list(LATENCY_COLUMNS))


def find_problems(
    documents: pd.DataFrame, reverification: pd.DataFrame, *, limits: OverdueThresholds
) -> pd.DataFrame:
    """Failed and overdue rows, ledger rows without a receipt, rejected re-verifications."""
    rows = []
    for doc in documents.itertuples(index=False):
        base = {"notarization_id": doc.notarization_id, "collection": doc.collection}
        base |= {"path": doc.path, "sha256": doc.sha256, "stage": doc.stage}
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
    by_id = documents.set_index("notarization_id") if len(documents) else None
    for check in reverification.itertuples(index=False):
        if check.status == "rejected" and by_id is not None:
            doc = by_id.loc[check.notarization_id]
            base = {"notarization_id": check.notarization_id, "collection": doc.collection}
            base |= {"path": doc.path, "sha256": doc.sha256, "stage": doc.stage}
            rows.append(base | {"problem": "receipt_rejected", "detail": check.message})
    return pd.DataFrame(rows, columns=list(PROBLEM_COLUMNS))


def _empty(columns: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})


def _summary(report: Report, data: ReportData, *, now: datetime) -> dict[str, Any]:
    docs, problems, checked = report.documents, report.problems, report.reverification
    kinds = problems["problem"].value_counts().to_dict()
    status = checked["status"].value_counts().to_dict()
    latency = report.latencies.set_index("stage")
    return {
        "collection": data.collection,
        "since": _iso(data.since),
        "until": _iso(data.until),
        "generated_at": _iso(now),
        "documents": len(docs),
        "stages": {s: int((docs["stage"] == s).sum()) for s in ALL_STAGES},
        "failed": int(kinds.get("failed", 0)),
        "overdue": int(kinds.get("overdue", 0)),
        "without_receipt": int(kinds.get("no_receipt", 0)),
        "receipts_stored": int(docs["receipt_verified_at"].notna().sum()),
        "anchors_stored": int(docs["anchor_verified_at"].notna().sum()),
        "reverified": len(checked),
        "reverify_ok": int(status.get("ok", 0)),
        "reverify_rejected": int(status.get("rejected", 0)),
        "reverify_unavailable": int(status.get("unavailable", 0)),
        "latency_s": {
            s: {
                "count": int(latency.at[s, "count"]),
                "median": _plain(latency.at[s, "median_s"]),
                "p95": _plain(latency.at[s, "p95_s"]),
            }
            for s in LATENCY_STAGES
        },
    }


def _plain(value: Any) -> float | None:
    """A JSON-safe number: ``None`` for missing values, else a Python float."""
    return None if value is None or pd.isna(value) else float(value)


def _iso(moment: Any) -> str | None:
    if moment is None or pd.isna(moment):
        return None
    return _utc(pd.Timestamp(moment).to_pydatetime()).isoformat().replace("+00:00", "Z")


# -- output -------------------------------------------------------------------------------


def stage_table(report: Report) -> list[dict[str, Any]]:
    """Rows ``{stage, documents, reached, median_s, p95_s}`` (Prefect table artifact)."""
    latency = report.latencies.set_index("stage")
    docs = report.documents
    rows = []
    for stage in ALL_STAGES:
        row = {"stage": stage, "documents": report.summary["stages"][stage]}
        if stage in STAGES:
            row |= {"reached": int(docs[_TIME_COLUMN[stage]].notna().sum())}
            row |= {"median_s": _plain(latency.at[stage, "median_s"])}
            row |= {"p95_s": _plain(latency.at[stage, "p95_s"])}
        rows.append(row)
    return rows


def summary_markdown(report: Report) -> str:
    """The summary as Markdown (Prefect markdown artifact)."""
    s = report.summary
    lines = [f"## Audit report: {s['collection'] or 'all collections'}", ""]
    lines += [f"Documents queued from {_period(s)}; generated {s['generated_at']} (UTC).", ""]
    lines += ["| measure | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in _headline(s)]
    lines += ["", "| stage | at it now | reached | median s to reach | p95 s |", "|---|" * 5]
    for row in stage_table(report):
        cells = [row["stage"], row["documents"], row.get("reached", "")]
        cells += [_num(row.get("median_s")), _num(row.get("p95_s"))]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def _period(s: Mapping[str, Any]) -> str:
    return f"{s['since'] or 'the start'} to {s['until'] or 'now'}"


def _headline(s: Mapping[str, Any]) -> list[tuple[str, Any]]:
    return [
        ("documents", s["documents"]),
        ("failed", s["failed"]),
        ("overdue", s["overdue"]),
        ("in a block without a stored receipt", s["without_receipt"]),
        ("receipts stored", s["receipts_stored"]),
        ("anchors stored", s["anchors_stored"]),
        ("receipts re-verified", s["reverified"]),
        ("re-verification ok", s["reverify_ok"]),
        ("re-verification rejected", s["reverify_rejected"]),
        ("re-verification unavailable", s["reverify_unavailable"]),
    ]


def _num(value: Any) -> str:
    return "" if value is None or pd.isna(value) else f"{value:g}"


def _for_output(frame: pd.DataFrame) -> pd.DataFrame:
    """Copy with timestamps as ISO strings (``Z``) and whole numbers without ``.0``."""
    out = frame.copy()
    for column in out.columns:
        if column.endswith("_at"):
            out[column] = out[column].map(_iso).astype(object)
        elif column in ("dblock_height", "anchor_confirmations", "step", "limit_s"):
            out[column] = out[column].map(lambda v: "" if v is None or pd.isna(v) else f"{v:g}")
    return out


def write_report(report: Report, out_dir: Path) -> dict[str, Path]:
    """Write the CSV files, ``summary.json`` and the self-contained ``report.html``.

    Returns:
        ``REPORT_FILES`` key -> path written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {key: out_dir / name for key, name in REPORT_FILES.items()}
    for key in ("documents", "latencies", "problems", "reverification"):
        _for_output(getattr(report, key)).to_csv(paths[key], index=False)
    paths["summary"].write_text(json.dumps(report.summary, indent=2, default=str) + "\n")
    paths["html"].write_text(render_html(report), encoding="utf-8")
    return paths


# -- HTML ---------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem;color:#1d2330}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #d5d9e0}
.cards{display:flex;flex-wrap:wrap;gap:.75rem}.card{border:1px solid #d5d9e0;border-radius:6px;
padding:.5rem .9rem;min-width:8rem}.card b{display:block;font-size:1.3rem}.bad b{color:#b42318}
table{border-collapse:collapse;font-size:.8rem;margin:.5rem 0}th,td{border:1px solid #d5d9e0;
padding:.2rem .45rem;text-align:left;vertical-align:top}th{background:#f1f3f7}
td{max-width:28rem;overflow-wrap:anywhere}.muted{color:#667085}
"""
_HTML_DOCUMENT_ROWS = 2000
_HTML_DOCUMENT_COLUMNS = [
    "notarization_id", "collection", "path", "sha256", "stage", "status_published",
    "status_multi_az", "status_ledger", "status_anchor", "created_at", "total_s",
    "dblock_height", "receipt_verified_at", "anchor_confirmations", "overdue",
]  # fmt: skip


def render_html(report: Report) -> str:
    """One HTML page with inline CSS and an inline chart: no external resources."""
    s = report.summary
    title = f"Audit report: {s['collection'] or 'all collections'}"
    sections = [
        f"<h1>{_e(title)}</h1>",
        f"<p class=muted>Documents queued from {_e(_period(s))}; "
        f"generated {_e(s['generated_at'])} (UTC).</p>",
        _cards(s),
        "<h2>Stage latencies</h2>",
        latency_chart(report.latencies),
        _table(report.latencies),
        "<h2>Failed and overdue documents</h2>",
        _table(report.problems, empty="No document failed or is overdue."),
        "<h2>Re-verification of stored receipts against the node</h2>",
        _table(report.reverification, empty="No receipt was re-verified."),
        "<h2>Documents</h2>",
        _documents_section(report.documents),
        "<p class=muted>The full data is in the CSV files next to this page: "
        + ", ".join(_e(n) for n in REPORT_FILES.values() if n.endswith(".csv"))
        + ".</p>",
    ]
    body = "\n".join(sections)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n<body>\n{body}\n</body></html>\n"
    )


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _cards(s: Mapping[str, Any]) -> str:
    bad = {"failed", "overdue", "re-verification rejected", "re-verification unavailable"}
    items = [(k, v) for k, v in _headline(s)] + [(f"at {k}", v) for k, v in s["stages"].items()]
    cards = [
        f'<div class="card{" bad" if k in bad and v else ""}"><b>{_e(v)}</b>{_e(k)}</div>'
        for k, v in items
    ]
    return f'<div class="cards">{"".join(cards)}</div>'


def _table(frame: pd.DataFrame, *, empty: str = "Nothing to show.") -> str:
    if frame.empty:
        return f"<p class=muted>{_e(empty)}</p>"
    return _for_output(frame).to_html(index=False, na_rep="", border=0, escape=True)


def _documents_section(documents: pd.DataFrame) -> str:
    shown = documents.head(_HTML_DOCUMENT_ROWS)[_HTML_DOCUMENT_COLUMNS].copy()
    shown["sha256"] = shown["sha256"].map(lambda v: f"{v[:16]}…")
    note = "<p class=muted>Main columns; every column and full hashes are in documents.csv."
    if len(documents) > len(shown):
        note += f" First {len(shown)} of {len(documents)} rows."
    return note + "</p>" + _table(shown, empty="No document in this period.")


def latency_chart(latencies: pd.DataFrame) -> str:
    """Median and p95 seconds per stage: a base64 PNG when matplotlib is installed, else an
    inline SVG drawn here. Either way nothing is loaded from elsewhere."""
    data = latencies[(latencies["count"] > 0) & (latencies["stage"] != "total")]
    if data.empty:
        return "<p class=muted>No stage was completed in this period.</p>"
    try:
        return _png_chart(data)
    except ImportError:
        return svg_chart(data)


def svg_chart(data: pd.DataFrame) -> str:
    """Horizontal bars (median dark, p95 light) as inline SVG, scaled to the largest p95."""
    width, label_w, bar_h = 640, 90, 14
    top = max(float(data["p95_s"].max()), float(data["median_s"].max()), 1e-9)
    parts = [
        f'<svg width="{width}" height="{40 + 2 * bar_h * len(data) + 8 * len(data)}" role="img" aria-label="stage latencies">'
    ]
    y = 10
    for row in data.itertuples(index=False):
        for value, colour, name in (
            (row.median_s, "#2f6fdb", "median"),
            (row.p95_s, "#9dbcf0", "p95"),
        ):
            length = max(1.0, (width - label_w - 130) * float(value) / top)
            parts.append(
                f'<rect x="{label_w}" y="{y}" width="{length:.1f}" height="{bar_h - 2}" fill="{colour}"><title>{_e(row.stage)} {name}</title></rect>'
            )
            parts.append(
                f'<text x="{label_w + length + 4:.1f}" y="{y + bar_h - 4}" font-size="11">{name} {_e(seconds_text(float(value)))}</text>'
            )
            y += bar_h
        parts.append(f'<text x="0" y="{y - bar_h + 2}" font-size="12">{_e(row.stage)}</text>')
        y += 8
    parts.append(
        f'<text x="{label_w}" y="{y + 16}" font-size="11" fill="#667085">dark: median, light: 95th percentile</text></svg>'
    )
    return "".join(parts)


def _png_chart(data: pd.DataFrame) -> str:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 0.6 + 0.5 * len(data)), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    positions = list(range(len(data)))
    axes.barh([p + 0.2 for p in positions], data["median_s"], height=0.4, label="median")
    axes.barh([p - 0.2 for p in positions], data["p95_s"], height=0.4, label="p95")
    axes.set_yticks(positions, list(data["stage"]))
    axes.set_xlabel("seconds")
    axes.legend()
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    encoded = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img alt="stage latencies" src="data:image/png;base64,{encoded}">'


def seconds_text(value: float) -> str:
    """``0.42 s``, ``12.5 s``, ``3.2 min``, ``5.1 h``, ``2.0 d``."""
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if value >= size:
            return f"{value / size:.1f} {unit}"
    return f"{value:.3g} s"
