"""The node's health checks and metrics (docs/jsonrpc.md §1, README "Operations").

Metrics (``/metrics``), besides the request metrics of ``ledger.observability``
(``notary_node_http_requests_total``, ``notary_node_http_request_seconds``) and the
process's own:

=========================================  ============================================
``notary_node_requests_total``             JSON-RPC calls by ``method`` and ``outcome``
``notary_node_block_height``               height of the last saved directory block
``notary_node_seconds_since_last_block``   seconds since that block closed (node clock)
``notary_node_open_block_entries``         entries accepted into the block being filled
``notary_node_entries_accepted_total``     entries accepted since the process started
``notary_node_store_commits_total``        group commits of the journal and blocks
``notary_node_store_writes_total``         writes those commits carried
=========================================  ============================================

Readiness (``/health/ready``): ``database`` (the SQLite file opens and answers; the last
group commit did not fail, as it does on a full disk) and ``blocks`` (the last block closed
less than ``ready_max_block_age_s`` ago; by default three block periods plus 5 s). The node
depends on no other service.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from ledger.node.service import NodeService
from ledger.node.settings import NodeSettings
from ledger.observability import (
    Check,
    CheckResult,
    Observability,
    Probe,
    ScrapeCollector,
    sqlite_file_check,
)

__all__ = ["node_observability", "seconds_since_last_block"]


def seconds_since_last_block(service: NodeService) -> float:
    """Seconds since the last saved directory block closed, by the node's clock (>= 0).

    The open block started when the one before it closed; while a closed block waits to
    be saved (a failing disk), each unsaved block adds one block period.
    """
    pl = service.process_list
    unsaved = max(0, pl.height - service.tip.height - 1)
    since = service.clock.now() - pl.start_s + unsaved * service.settings.block_time_s
    return max(0.0, since)


def node_observability(
    service: NodeService, settings: NodeSettings, *, base: Observability
) -> Observability:
    """Add the node's figures and checks (module docstring) to ``base``; returns it."""
    ScrapeCollector(lambda: _figures(service), registry=base.registry)
    base.readiness.add(Check("database", _database_probe(service, settings)))
    base.readiness.add(Check("blocks", _blocks_probe(service, settings)))
    base.live = lambda: {"height": service.tip.height}
    return base


def _figures(service: NodeService) -> Iterable[Metric]:
    store = service.store
    yield GaugeMetricFamily(
        "notary_node_block_height",
        "Height of the last saved directory block.",
        value=service.tip.height,
    )
    yield GaugeMetricFamily(
        "notary_node_seconds_since_last_block",
        "Seconds since the last saved directory block closed, by the node's clock.",
        value=seconds_since_last_block(service),
    )
    yield GaugeMetricFamily(
        "notary_node_open_block_entries",
        "Entries accepted into the directory block being filled.",
        value=len(service.process_list.entries),
    )
    yield CounterMetricFamily(
        "notary_node_entries_accepted",
        "Entries (reveals) accepted since the process started.",
        value=service.accepted_entries,
    )
    yield CounterMetricFamily(
        "notary_node_store_commits",
        "Group commits of the node's store since the process started.",
        value=store.batches,
    )
    yield CounterMetricFamily(
        "notary_node_store_writes",
        "Writes carried by those group commits.",
        value=store.jobs,
    )


def _database_probe(service: NodeService, settings: NodeSettings) -> Probe:
    readable = sqlite_file_check(settings.db_path)

    async def probe() -> CheckResult:
        result = await readable()
        failing = service.store.failing
        if result.ok and failing is not None:
            return CheckResult(
                False, f"the last write to {settings.db_path.name} failed: {failing}"
            )
        return result

    return probe


def _blocks_probe(service: NodeService, settings: NodeSettings) -> Probe:
    limit_s = settings.ready_max_block_age_s
    if limit_s is None:
        limit_s = 3 * settings.block_time_s + 5.0

    async def probe() -> CheckResult:
        since = seconds_since_last_block(service)
        figures = {"height": service.tip.height, "seconds_since_last_block": round(since, 3)}
        if since > limit_s:
            return CheckResult(False, f"no block for {since:.1f} s (limit {limit_s:g} s)", figures)
        return CheckResult(True, "producing blocks", figures)

    return probe
