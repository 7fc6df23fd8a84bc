"""Audit report output: CSV and JSON files, the self-contained HTML page, the chart, and the
Prefect artifact shapes (table rows, Markdown). The frames come from ``tasks.report``.

Given where ``notary proof export --html`` wrote the proofs (``ProofLinks``), the HTML page
links each anchored document to its proof bundle and to the verification page, by paths
relative to the report's folder, so the two folders can be moved or shared together.
"""

from __future__ import annotations

import base64
import html
import io
import json
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any, TextIO
from urllib.parse import quote

import pandas as pd

from connectors.audit import ALL_STAGES
from tasks.proofs import PAGE_NAME, bundle_relpath
from tasks.report import REPORT_FILES, STAGES, Report, iso_utc, plain_number


@dataclass(frozen=True)
class ProofLinks:
    """Where the proofs are, as seen from the report's folder.

    Attributes:
        base: the export folder of ``notary proof export --html``, relative to the report
            folder, with ``/`` separators (``"../proofs"``, ``"proofs"``).
    """

    base: str

    def _href(self, relative: PurePosixPath | str) -> str:
        return quote(str(PurePosixPath(self.base) / relative))

    def bundle(self, collection: str, path: str, sha256: str, notarized_at: datetime) -> str:
        """The URL (relative, percent-encoded) of a document version's bundle."""
        return self._href(bundle_relpath(collection, path, sha256, notarized_at))

    @property
    def page(self) -> str:
        """The URL (relative, percent-encoded) of the verification page."""
        return self._href(PAGE_NAME)


# -- output -------------------------------------------------------------------------------


def stage_table(report: Report) -> list[dict[str, Any]]:
    """Rows ``{stage, documents, reached, median_s, p95_s}`` (Prefect table artifact)."""
    latency = report.latencies.set_index("stage")
    rows = []
    for stage in ALL_STAGES:
        row = {"stage": stage, "documents": report.summary["stages"][stage]}
        if stage in STAGES:
            row |= {"reached": report.reached[stage]}
            row |= {"median_s": plain_number(latency.at[stage, "median_s"])}
            row |= {"p95_s": plain_number(latency.at[stage, "p95_s"])}
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
        ("anchors verified under trust policy", s.get("trust_policy", "not stated")),
        ("receipts re-verified", s["reverified"]),
        ("re-verification ok", s["reverify_ok"]),
        ("re-verification rejected", s["reverify_rejected"]),
        ("re-verification unavailable", s["reverify_unavailable"]),
        ("runs crashed", len(s.get("runs_crashed") or ())),
    ]


def _num(value: Any) -> str:
    return "" if value is None or pd.isna(value) else f"{value:g}"


def _for_output(frame: pd.DataFrame) -> pd.DataFrame:
    """Copy with timestamps as ISO strings (``Z``) and whole numbers without ``.0``."""
    out = frame.copy()
    for column in out.columns:
        if column.endswith("_at"):
            out[column] = out[column].map(iso_utc).astype(object)
        elif column in ("dblock_height", "anchor_confirmations", "step", "limit_s"):
            out[column] = out[column].map(lambda v: "" if v is None or pd.isna(v) else f"{v:g}")
    return out


def write_csv(frame: pd.DataFrame, target: Path | TextIO, *, header: bool = True) -> None:
    """``frame`` as CSV (timestamps ISO ``Z``, whole numbers without ``.0``) to a path, or
    appended to an open text file (``header=False`` for a page after the first)."""
    _for_output(frame).to_csv(target, index=False, header=header)


def write_report(
    report: Report, out_dir: Path, *, proofs: ProofLinks | None = None
) -> dict[str, Path]:
    """Write the CSV files, ``summary.json`` and the self-contained ``report.html``.

    Args:
        proofs: where the exported proofs are (``report.html`` then links them).

    Returns:
        ``REPORT_FILES`` key -> path written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {key: out_dir / name for key, name in REPORT_FILES.items()}
    for key in ("documents", "batches", "latencies", "problems", "reverification"):
        written = {"documents": report.documents_csv, "problems": report.problems_csv}.get(key)
        if written is None:
            write_csv(getattr(report, key), paths[key])
        elif written.resolve() != paths[key].resolve():
            shutil.copyfile(written, paths[key])
    paths["summary"].write_text(json.dumps(report.summary, indent=2, default=str) + "\n")
    paths["html"].write_text(render_html(report, proofs=proofs), encoding="utf-8")
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
#: Rows the HTML page shows of documents and of problems (all are in the CSV files).
HTML_TABLE_ROWS = 2000
_HTML_DOCUMENT_COLUMNS = [
    "notarization_id", "collection", "path", "sha256", "stage", "status_published",
    "status_multi_az", "status_ledger", "status_anchor", "created_at", "total_s",
    "dblock_height", "receipt_verified_at", "anchor_confirmations", "overdue",
    "rfc3161_timestamps", "opentimestamps",
]  # fmt: skip


def render_html(report: Report, *, proofs: ProofLinks | None = None) -> str:
    """One HTML page with inline CSS and an inline chart: no external resources (links to
    the proofs, when ``proofs`` says where they are, are relative files)."""
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
        _problems_section(report),
        "<h2>Re-verification of stored receipts against the node</h2>",
        _table(report.reverification, empty="No receipt was re-verified."),
        "<h2>Runs that crashed</h2>",
        _crashed_runs(s.get("runs_crashed") or []),
        "<h2>Batches</h2>",
        "<p class=muted>One ledger entry per batch carries the root of its documents' "
        "tree; each document below has the stage of its batch and its own proof.</p>",
        _table(report.batches, empty="No batch: every document has an entry of its own."),
        "<h2>Documents</h2>",
        _documents_section(report.documents, s["documents"], proofs),
        "<p class=muted>The full data is in the CSV files next to this page: "
        + ", ".join(_e(n) for n in REPORT_FILES.values() if n.endswith(".csv"))
        + ".</p>",
    ]
    body = "\n".join(sections)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n<body>\n{body}\n</body></html>\n"
    )


def _crashed_runs(runs: list[Mapping[str, Any]]) -> str:
    """The runs found crashed (killed before they finished) that started in the period."""
    columns = ["id", "flow", "host", "pid", "started_at", "heartbeat_at", "reason"]
    frame = pd.DataFrame([{c: run.get(c) for c in columns} for run in runs], columns=columns)
    return _table(frame, empty="No run crashed: every run finished and recorded its counts.")


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _cards(s: Mapping[str, Any]) -> str:
    bad = {"failed", "overdue", "re-verification rejected", "re-verification unavailable"}
    bad.add("runs crashed")
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


def _problems_section(report: Report) -> str:
    """The first ``HTML_TABLE_ROWS`` problems (a failing archive can have millions)."""
    shown = report.problems.head(HTML_TABLE_ROWS)
    table = _table(shown, empty="No document failed or is overdue.")
    if report.problem_count <= len(shown):
        return table
    note = f"First {len(shown)} of {report.problem_count} rows; every row is in problems.csv."
    return f"<p class=muted>{note}</p>" + table


def _documents_section(documents: pd.DataFrame, total: int, proofs: ProofLinks | None) -> str:
    head = documents.head(HTML_TABLE_ROWS)
    shown = head[_HTML_DOCUMENT_COLUMNS].copy()
    shown["sha256"] = shown["sha256"].map(lambda v: f"{v[:16]}…")
    note = "<p class=muted>Main columns; every column and full hashes are in documents.csv."
    if total > len(shown):
        note += f" First {len(shown)} of {total} rows."
    if proofs is None or shown.empty:
        return note + "</p>" + _table(shown, empty="No document in this period.")
    note += (
        f' Each anchored document links to its proof bundle; open <a href="{_e(proofs.page)}">'
        "the verification page</a> and drop the document and its bundle on it (nothing leaves"
        " the machine), or run <code>notary verify FILE --proof BUNDLE</code>."
    )
    cells = _for_output(shown).map(lambda v: "" if pd.isna(v) else _e(v))
    cells["proof"] = [_proof_cell(row, proofs) for row in head.itertuples(index=False)]
    table = cells.to_html(index=False, na_rep="", border=0, escape=False)
    return note + "</p>" + table


def _proof_cell(row: Any, proofs: ProofLinks) -> str:
    """Links of an anchored document: its bundle and the page (other stages: nothing)."""
    if row.stage != "anchor":
        return ""
    bundle = proofs.bundle(row.collection, row.path, row.sha256, row.created_at)
    return f'<a href="{_e(bundle)}">bundle</a> · <a href="{_e(proofs.page)}">verify</a>'


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
