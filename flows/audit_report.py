"""The ``audit_report`` flow: an audit report of a collection and period, as files and artifacts.

Reads the audit store (the record of truth), re-verifies a sample of stored receipts
against the node's directory blocks, writes ``report.html`` (self-contained; given the
folder of ``notary proof export --html``, it links each anchored document to its proof
bundle and the verification page) and the CSV files (``tasks.report.REPORT_FILES``) into
``out_dir``, and publishes the same summary as a
Prefect table artifact and a markdown artifact. The logic is in ``tasks.report`` (plain
pandas functions); this module only orchestrates. The store is read page by page
(``tasks.report_stream``): memory does not grow with the documents of the period. Each
run is recorded in the store's ``runs`` table.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
from prefect import flow, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote

from connectors.audit import ProofRecord, RunStatus
from connectors.errors import RpcError
from connectors.node import NOT_FOUND_CODES, NodeClient
from flows.pipeline import open_audit_store
from flows.run_heartbeat import RunHeartbeat
from flows.settings import PipelineSettings
from tasks.report import (
    REVERIFY_COLUMNS,
    DblockFetcher,
    OverdueThresholds,
    Report,
    parse_moment,
    reverify_chosen,
)
from tasks.report_output import ProofLinks, stage_table, summary_markdown, write_report
from tasks.report_stream import stream_report

read_audit_data = task(name="read-audit-data", cache_policy=NO_CACHE)(stream_report)
write_report_files = task(name="write-report-files", cache_policy=NO_CACHE)(write_report)


@task(name="reverify-receipts", cache_policy=NO_CACHE)
def reverify_sample(proofs: Sequence[ProofRecord], settings: PipelineSettings) -> pd.DataFrame:
    """Re-verify these stored receipts (the report's sample) against the node at
    ``settings.node_url`` (no node call when there is none)."""
    chosen = [p for p in proofs if p.receipt is not None]
    if not chosen:
        return pd.DataFrame(columns=list(REVERIFY_COLUMNS))
    access = settings.node_access()
    with NodeClient(settings.node_url, timeout_s=settings.http_timeout_s, access=access) as node:
        return reverify_chosen(chosen, node_dblock_fetcher(node))


def node_dblock_fetcher(node: NodeClient) -> DblockFetcher:
    """``height -> directory block bytes`` from the node's ``dblock-by-height`` ``rawdata``;
    raises ``LookupError`` when the node has no block at that height."""

    def fetch(height: int) -> bytes:
        try:
            return bytes.fromhex(node.dblock_by_height(height)["rawdata"])
        except RpcError as exc:
            if exc.code in NOT_FOUND_CODES:
                raise LookupError(f"no directory block at height {height}") from exc
            raise

    return fetch


@flow(name="audit-report", validate_parameters=False)
def audit_report(
    collection: str | None = None,
    since: str | datetime | None = None,
    until: str | datetime | None = None,
    out_dir: str | None = None,
    settings: PipelineSettings | None = None,
    sample: int = 50,
    thresholds: Mapping[str, float | None] | None = None,
    seed: int = 0,
    proofs_dir: str | None = None,
) -> dict[str, Any]:
    """Write the audit report of ``collection`` (all when ``None``) for documents queued in
    ``[since, until)``.

    Args:
        collection: collection name; ``None`` for every collection.
        since, until: ISO 8601 date or date-time (UTC when no zone), a time before now
            (``-7d``, ``-12h``, ``-30m``) or aware datetimes; a date alone for ``until``
            includes that whole day.
        out_dir: folder for the files; default
            ``<data_dir>/reports/<collection>-<YYYYmmddTHHMMSSZ>``.
        settings: where the audit store and the node are.
        sample: stored receipts to re-verify against the node (0: none, no node needed).
        thresholds: ``{stage: seconds or None}`` overdue limits (``tasks.report.
            OverdueThresholds``; stages not named keep their defaults).
        seed: seed of the re-verification sample.
        proofs_dir: the folder ``notary proof export --html`` wrote; ``report.html`` then
            links each anchored document to its bundle and to the page there (paths
            relative to the report's folder). None: no links.

    Returns:
        the report summary (``tasks.report`` ``Report.summary``) plus ``out_dir``,
        ``files`` (name -> path) and ``run_id``.

    Raises:
        ValueError: a bad date or threshold.
        MigrationError, sqlalchemy.exc.OperationalError: the audit store cannot be used.
    """
    settings = settings or PipelineSettings()
    now = datetime.now(UTC)
    start = parse_moment(since, now=now)
    end = parse_moment(until, end_of_day=True, now=now)
    limits = OverdueThresholds.from_mapping(thresholds or {})
    target = Path(out_dir) if out_dir else default_out_dir(settings.data_dir, collection, now)
    parameters = {"collection": collection, "since": str(start), "until": str(end)}
    with open_audit_store(settings) as store:
        run_id = store.runs.start(
            "audit_report",
            parameters=parameters | {"sample": sample},
            stale_after_s=settings.run_stale_s,
        )
        counts: dict[str, Any] = {}
        status: RunStatus = "failed"
        beat = RunHeartbeat(store, run_id, interval_s=settings.run_heartbeat_s)
        try:
            streamed = read_audit_data(
                store,
                target,
                now=now,
                collection=collection,
                since=start,
                until=end,
                thresholds=limits,
                sample=sample,
                seed=seed,
            )
            checked = reverify_sample(quote(streamed.sampled), settings)
            report = streamed.finish(checked)
            report.summary["runs_crashed"] = _crashed(store.runs.crashed(since=start, until=end))
            # the anchors were verified at the anchor stage under this policy
            report.summary["trust_policy"] = settings.trust_policy
            paths = write_report_files(report, target, proofs=proof_links(target, proofs_dir))
            counts, status = report.summary, "completed"
        finally:
            beat.stop()
            store.runs.finish(run_id, counts=counts, status=status)
    publish_artifacts(report, paths=paths)
    files = {name: str(path) for name, path in paths.items()}
    return report.summary | {"out_dir": str(target), "files": files, "run_id": run_id}


def _crashed(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Crashed runs as the summary keeps them (times as ISO text, JSON-ready)."""
    return [
        {k: v.isoformat() if isinstance(v, datetime) else v for k, v in run.items()} for run in runs
    ]


def proof_links(report_dir: Path, proofs_dir: str | None) -> ProofLinks | None:
    """``proofs_dir`` as seen from ``report_dir`` (relative, ``/`` separators); None: none."""
    if proofs_dir is None:
        return None
    relative = os.path.relpath(Path(proofs_dir).resolve(), report_dir.resolve())
    return ProofLinks(Path(relative).as_posix())


def publish_artifacts(report: Report, *, paths: Mapping[str, Path]) -> None:
    """The stage table and the markdown summary as artifacts of the current flow run."""
    key = f"audit-report-{slug(report.summary['collection'])}"
    what = report.summary["collection"] or "all collections"
    create_table_artifact(
        table=stage_table(report), key=f"{key}-stages", description=f"Stages of {what}"
    )
    files = "\n".join(f"- {name}: `{path}`" for name, path in paths.items())
    create_markdown_artifact(
        markdown=summary_markdown(report) + f"\nFiles:\n\n{files}\n",
        key=key,
        description=f"Audit report of {what}",
    )


def slug(collection: str | None) -> str:
    """Lowercase letters, digits and dashes (artifact keys, folder names); ``all`` for None."""
    if collection is None:
        return "all"
    text = re.sub(r"[^a-z0-9]+", "-", collection.lower()).strip("-")
    return text[:60].strip("-") or "collection"


def default_out_dir(data_dir: Path, collection: str | None, now: datetime) -> Path:
    """``<data_dir>/reports/<slug>-<YYYYmmddTHHMMSSZ>``."""
    return data_dir / "reports" / f"{slug(collection)}-{now:%Y%m%dT%H%M%SZ}"
