"""Health, metrics and logs of the pipeline's long-running commands (README "Operations").

``pipeline_metrics(settings, role=...)`` gives ``notary watch`` (``role="watch"``) and
``notary collect --listen`` (``role="collect"``) their counters and, when
``settings.metrics_port`` is set (``NOTARY_METRICS_PORT``, ``--metrics-port``), serves on
``metrics_host:metrics_port`` (loopback by default; off by default, so two commands never
compete for a port):

``/metrics``
    ``notary_pipeline_documents_total{stage}`` (documents this process moved: ``published``
    and ``failed`` by watch, ``ledger``, ``anchor`` and ``failed`` (receipts rejected) by
    the collector), ``notary_pipeline_documents_seen_total`` and
    ``notary_pipeline_documents_known_total`` (watch: files found, already notarized),
    ``notary_pipeline_batches_total`` / ``notary_pipeline_sweeps_total{cause}`` and the
    time of the last one (``notary_pipeline_last_run_timestamp_seconds``); read from the
    audit store at scrape time: ``notary_pipeline_documents_waiting{stage}`` (notarizations
    short of ``anchor``) and ``notary_pipeline_oldest_unanchored_seconds``.
``/health/live``, ``/health``
    200 while the process runs.
``/health/ready``
    ``audit_store`` (answers ``SELECT 1``) and ``api`` (the publishing API answers
    operation 1 with the key); the collector also ``node`` (answers ``heights``) and
    ``unanchored`` (no notarization has waited longer than ``ready_max_unanchored_age_s``
    for its anchor; figures ``waiting`` and ``oldest_unanchored_age_s``).

The command line's log lines are set by ``flows.cli.logs``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from prometheus_client import Counter, Gauge
from prometheus_client.core import GaugeMetricFamily, Metric
from sqlalchemy import Engine, text

from connectors.audit import UNANCHORED_STAGES, AuditStore, read_unanchored
from connectors.node import NodeClient
from connectors.publishing import PublishingClient
from connectors.served_app import ServedApp
from flows.settings import PipelineSettings
from ledger.observability import (
    Check,
    CheckResult,
    Observability,
    ObservabilityMiddleware,
    Probe,
    ScrapeCollector,
    not_found_app,
)

__all__ = ["PipelineMetrics", "Role", "pipeline_metrics"]

Role = Literal["watch", "collect"]


@dataclass
class PipelineMetrics:
    """The counters of one command and what its server exposes (module docstring)."""

    role: Role
    observability: Observability
    documents: Counter
    seen: Counter
    known: Counter
    runs: Counter
    last_run: Gauge

    @classmethod
    def create(cls, role: Role) -> PipelineMetrics:
        obs = Observability.create(f"pipeline-{role}", requests_prefix=None)
        registry = obs.registry
        kind = "batches" if role == "watch" else "sweeps"
        return cls(
            role=role,
            observability=obs,
            documents=Counter(
                "notary_pipeline_documents",
                "Documents this process moved to a stage.",
                ("stage",),
                registry=registry,
            ),
            seen=Counter("notary_pipeline_documents_seen", "Files found ready.", registry=registry),
            known=Counter(
                "notary_pipeline_documents_known",
                "Files skipped: their hash is notarized already.",
                registry=registry,
            ),
            runs=Counter(
                f"notary_pipeline_{kind}",
                "Batches (watch) or sweeps (collect) run; sweeps by what started them.",
                ("cause",) if role == "collect" else (),
                registry=registry,
            ),
            last_run=Gauge(
                "notary_pipeline_last_run_timestamp_seconds",
                "Unix time at which the last batch or sweep ended.",
                registry=registry,
            ),
        )

    def record_batch(self, result: dict[str, Any]) -> None:
        """Count one batch of ``notary watch`` (``watch_folder``'s batch result)."""
        self.seen.inc(result["documents_seen"])
        self.known.inc(result["skipped_known"])
        # Entries this process published: the batch's own and those it finished for others.
        published = result["published"] + result.get("published_for_other_runs", 0)
        self.documents.labels("published").inc(published)
        self.documents.labels("failed").inc(result["publish_failed"] + result["hash_errors"])
        self.runs.inc()
        self.last_run.set_to_current_time()

    def record_sweep(self, result: dict[str, Any], woken: bool) -> None:
        """Count one sweep of ``notary collect --listen`` (``collect_proofs``'s result)."""
        self.documents.labels("ledger").inc(result["ledger_recorded"])
        self.documents.labels("anchor").inc(result["anchored"])
        self.documents.labels("failed").inc(result.get("receipts_rejected", 0))
        self.runs.labels("callback" if woken else "tick").inc()
        self.last_run.set_to_current_time()


@contextmanager
def pipeline_metrics(settings: PipelineSettings, *, role: Role) -> Iterator[PipelineMetrics]:
    """The command's metrics; with ``settings.metrics_port``, served while inside.

    Raises:
        ServerStartError: the metrics server could not listen (port in use).
    """
    metrics = PipelineMetrics.create(role)
    if settings.metrics_port is None:
        yield metrics
        return
    with ExitStack() as stack:
        store = AuditStore(settings.audit_url, create_tables=False, connect_retry_s=0)
        stack.callback(store.close)
        _add_checks(metrics, settings, store, stack)
        app = ObservabilityMiddleware(not_found_app, observability=metrics.observability)
        host, port = settings.metrics_host, settings.metrics_port
        stack.enter_context(ServedApp(app, host=host, port=port, name="metrics server"))
        yield metrics


def _add_checks(
    metrics: PipelineMetrics, settings: PipelineSettings, store: AuditStore, stack: ExitStack
) -> None:
    obs = metrics.observability
    timeout_s = obs.readiness.timeout_s
    obs.readiness.add(Check("audit_store", _threaded(lambda: _ping(store.engine), "audit store")))
    api = stack.enter_context(
        PublishingClient(settings.api_url, settings.resolve_api_key(), timeout_s=timeout_s)
    )
    obs.readiness.add(Check("api", _threaded(api.info, "publishing API")))
    if metrics.role != "collect":
        return
    node = stack.enter_context(NodeClient(settings.node_url, timeout_s=timeout_s))
    obs.readiness.add(Check("node", _threaded(node.heights, "node")))
    obs.readiness.add(Check("unanchored", _unanchored_probe(store, settings)))
    ScrapeCollector(lambda: _waiting_families(store), registry=obs.registry)


def _ping(engine: Engine) -> None:
    with engine.connect() as connection:
        connection.execute(text("SELECT 1"))


def _threaded(call: Callable[[], object], what: str) -> Probe:
    """A probe: ``call()`` returns (in a worker thread) without raising."""

    async def probe() -> CheckResult:
        try:
            await asyncio.to_thread(call)
        except Exception as exc:  # the connectors' errors all mean "cannot be used now"
            return CheckResult(False, f"{what} unreachable ({type(exc).__name__})")
        return CheckResult(True, f"{what} reachable")

    return probe


def _unanchored_probe(store: AuditStore, settings: PipelineSettings) -> Probe:
    limit_s = settings.ready_max_unanchored_age_s

    async def probe() -> CheckResult:
        unanchored = await asyncio.to_thread(read_unanchored, store.engine)
        age_s = unanchored.oldest_age_s(datetime.now(UTC))
        figures = {"waiting": unanchored.total, "oldest_unanchored_age_s": round(age_s, 3)}
        if age_s > limit_s:
            detail = f"a document has waited {age_s:.0f} s for its anchor (limit {limit_s:g} s)"
            return CheckResult(False, detail, figures)
        return CheckResult(True, f"{unanchored.total} documents wait for an anchor", figures)

    return probe


def _waiting_families(store: AuditStore) -> Iterable[Metric]:
    unanchored = read_unanchored(store.engine)
    waiting = GaugeMetricFamily(
        "notary_pipeline_documents_waiting",
        "Notarizations in the audit store short of the anchor stage, by stage.",
        labels=("stage",),
    )
    for stage in UNANCHORED_STAGES:
        waiting.add_metric((stage,), unanchored.waiting[stage])
    yield waiting
    yield GaugeMetricFamily(
        "notary_pipeline_oldest_unanchored_seconds",
        "Seconds the oldest notarization short of the anchor stage has waited.",
        value=unanchored.oldest_age_s(datetime.now(UTC)),
    )
