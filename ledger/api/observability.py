"""The publishing API's health checks and metrics (docs/rest-api.md §5, README "Operations").

Metrics (``/metrics``), besides the process's own:

===============================================  ========================================
``notary_api_requests_total{method,route,status}``  requests answered, by route template
``notary_api_request_seconds{method,route}``     their latency (histogram)
``notary_api_stage_seconds{stage}``              acceptance (202) to ``ledger`` / ``anchor``
``notary_api_write_queue_depth``                 accepted writes not yet in a block
``notary_api_unpaid_writes``                     of those, not yet committed (paid)
``notary_api_oldest_unblocked_write_seconds``    how long the oldest of them has waited
``notary_api_failed_writes``                     writes given up after repeated errors
``notary_api_callbacks_pending``                 callbacks queued, not yet delivered
``notary_api_entry_credit_balance``              balance of the paying ``ec_address``
``notary_api_entry_credits_funded``              1, or 0 while it is dry and writes are held
``notary_api_entry_credits_dry_seconds``         how long it has been dry (0 while funded)
``notary_api_entry_credits_needed_min``          least credits the unpaid writes cost
``notary_api_writes_accepted_total``             writes committed (answered 202)
``notary_api_write_commits_total``               group commits that carried them
===============================================  ========================================

The queue figures are read from the API's database at scrape time (``ledger.api.outbox.backlog``);
the balance is asked of the node just before (it keeps its last value while the node does
not answer). Stage latencies are observed by the worker as it moves rows.

Readiness (``/health/ready``), each a check of the answer:

- ``database``: the API's database answers ``SELECT 1`` (and the accounts database, in
  sandbox mode);
- ``node``: the node answers ``heights`` (through the gateway when the API was given one);
- ``wallet``: the wallet answers ``properties`` (when the API talks to one);
- ``worker``: the background worker thread runs (unless ``worker_enabled`` is off);
- ``entry_credits``: the worker's credit gate (``ledger.api.outbox.credit_gate``) is funded, and
  the balance of ``ec_address`` covers ``needed_ec_min`` (figures ``balance_ec``,
  ``needed_ec_min``, ``queued_writes``); only with a node and an address;
- ``write_backlog``: no accepted write has waited longer than
  ``ready_max_unblocked_age_s`` for its directory block (figures ``queued_writes``,
  ``oldest_unblocked_age_s``, ``failed_writes``, ``callbacks_pending``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass

from prometheus_client import Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from sqlalchemy import text

from ledger.api.db import Database
from ledger.api.models import Stage
from ledger.api.outbox.backlog import Backlog, read_backlog
from ledger.api.services import Services
from ledger.jsonrpc.client import AsyncJsonRpcClient
from ledger.jsonrpc.errors import JsonRpcError
from ledger.observability import (
    Check,
    CheckResult,
    Observability,
    Probe,
    ScrapeCollector,
    gauge_families,
    jsonrpc_check,
)

__all__ = ["STAGE_BUCKETS_S", "api_observability"]

#: Buckets of ``notary_api_stage_seconds``: one block of the development network (2 s) to
#: a few production blocks (600 s each).
STAGE_BUCKETS_S = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0)


@dataclass
class _Balance:
    """The last entry credit balance the node gave (None before the first answer)."""

    balance_ec: int | None = None


def api_observability(
    svc: Services,
    *,
    base: Observability,
    node: AsyncJsonRpcClient | None,
    wallet: AsyncJsonRpcClient | None,
) -> Observability:
    """Add the API's figures and checks (module docstring) to ``base``; returns it.

    Sets ``svc.stage_observer``, so call it before the services start. ``node`` and
    ``wallet`` are clients of the services the API talks to over JSON-RPC, None when it
    does not (a gateway given by the caller, the sandbox's built-in ledger).
    """
    stages = Histogram(
        "notary_api_stage_seconds",
        "Seconds from a write's acceptance (202) to its move to the stage.",
        ("stage",),
        buckets=STAGE_BUCKETS_S,
        registry=base.registry,
    )

    def observe_stage(stage: Stage, latencies_s: Sequence[float]) -> None:
        child = stages.labels(stage.value)
        for seconds in latencies_s:
            child.observe(seconds)

    svc.stage_observer = observe_stage
    balance = _Balance()
    ec_address = svc.settings.ec_address
    if node is not None and ec_address:
        base.before_scrape.append(_balance_refresh(node, ec_address, balance))
    ScrapeCollector(lambda: _families(svc, balance), registry=base.registry)
    _add_checks(svc, base, node=node, wallet=wallet, balance=balance)
    return base


def _add_checks(
    svc: Services,
    base: Observability,
    *,
    node: AsyncJsonRpcClient | None,
    wallet: AsyncJsonRpcClient | None,
    balance: _Balance,
) -> None:
    checks = base.readiness
    checks.add(Check("database", _database_probe(svc)))
    if node is not None:
        checks.add(Check("node", jsonrpc_check(node, "heights", what="node")))
    else:
        checks.add(Check("node", _gateway_probe(svc)))
    if wallet is not None:
        checks.add(Check("wallet", jsonrpc_check(wallet, "properties", what="wallet")))
    if svc.settings.worker_enabled:
        checks.add(Check("worker", _worker_probe(svc)))
    if node is not None and svc.settings.ec_address:
        checks.add(Check("entry_credits", _credits_probe(svc, node, balance)))
    checks.add(Check("write_backlog", _backlog_probe(svc)))


def _families(svc: Services, balance: _Balance) -> Iterable[Metric]:
    backlog = read_backlog(svc.db)
    now = svc.clock.now()
    gauges = (
        (
            "write_queue_depth",
            "Accepted writes not yet in a directory block.",
            backlog.queued_writes,
        ),
        ("unpaid_writes", "Queued writes whose commit is not accepted yet.", backlog.unpaid_writes),
        (
            "oldest_unblocked_write_seconds",
            "Seconds the oldest queued write has waited for its directory block.",
            backlog.oldest_unblocked_age_s(now),
        ),
        ("failed_writes", "Writes given up after repeated errors.", backlog.failed_writes),
        ("callbacks_pending", "Callbacks queued, not yet delivered.", backlog.callbacks_pending),
        (
            "entry_credits_needed_min",
            "Least entry credits the unpaid writes cost.",
            backlog.needed_ec_min,
        ),
    )
    yield from gauge_families("notary_api", gauges)
    gate = svc.credits.snapshot()
    yield GaugeMetricFamily(
        "notary_api_entry_credits_funded",
        "1 while the paying address pays for writes; 0 while it is dry and writes are held.",
        value=1 if gate.funded else 0,
    )
    yield GaugeMetricFamily(
        "notary_api_entry_credits_dry_seconds",
        "Seconds since the paying address ran dry (0 while it is funded).",
        value=0.0 if gate.dry_since is None else max(0.0, now - gate.dry_since),
    )
    if balance.balance_ec is not None:
        yield GaugeMetricFamily(
            "notary_api_entry_credit_balance",
            "Entry credit balance of the address paying for writes (as of the scrape).",
            value=balance.balance_ec,
        )
    stats = svc.writer.stats
    yield CounterMetricFamily(
        "notary_api_writes_accepted", "Writes committed (answered 202).", value=stats.writes
    )
    yield CounterMetricFamily(
        "notary_api_write_commits", "Group commits that carried them.", value=stats.batches
    )


async def _ec_balance(node: AsyncJsonRpcClient, address: str) -> int:
    result = await node.call("entry-credit-balance", {"address": address})
    return int(result["balance"])


def _balance_refresh(
    node: AsyncJsonRpcClient, address: str, balance: _Balance
) -> Callable[[], Awaitable[None]]:
    async def refresh() -> None:
        balance.balance_ec = await _ec_balance(node, address)

    return refresh


def _ping(db: Database) -> None:
    with db.engine.connect() as connection:
        connection.execute(text("SELECT 1"))


def _database_probe(svc: Services) -> Probe:
    databases = [svc.db] if svc.accounts_db is svc.db else [svc.db, svc.accounts_db]

    async def probe() -> CheckResult:
        for db in databases:
            await asyncio.to_thread(_ping, db)
        return CheckResult(True, "database answers")

    return probe


def _gateway_probe(svc: Services) -> Probe:
    async def probe() -> CheckResult:
        try:
            height = await asyncio.to_thread(svc.gateway.height)
        except Exception as exc:  # the gateway's errors vary with its transport: all mean down
            return CheckResult(False, f"node unreachable ({type(exc).__name__})")
        return CheckResult(True, "node reachable", {"height": height})

    return probe


def _worker_probe(svc: Services) -> Probe:
    async def probe() -> CheckResult:
        worker = svc.worker
        if worker is None or not worker.running:
            return CheckResult(False, "the background worker is not running")
        return CheckResult(True, "the background worker runs")

    return probe


def _credits_probe(svc: Services, node: AsyncJsonRpcClient, balance: _Balance) -> Probe:
    async def probe() -> CheckResult:
        backlog = await asyncio.to_thread(read_backlog, svc.db)
        figures: dict[str, int | None] = {
            "balance_ec": None,
            "needed_ec_min": backlog.needed_ec_min,
            "queued_writes": backlog.queued_writes,
        }
        gate = svc.credits.snapshot()
        if not gate.funded:  # the worker holds writes: say so even if the node is down
            figures["balance_ec"] = gate.balance_ec
            dry_s = 0.0 if gate.dry_since is None else svc.clock.now() - gate.dry_since
            detail = f"the paying address ran dry {dry_s:.0f} s ago: writes are held"
            return CheckResult(False, detail, figures)
        try:
            balance.balance_ec = await _ec_balance(node, svc.settings.ec_address)
        except JsonRpcError as exc:
            return CheckResult(False, f"balance unknown: {type(exc).__name__}", figures)
        figures["balance_ec"] = balance.balance_ec
        if balance.balance_ec < backlog.needed_ec_min:
            detail = f"{balance.balance_ec} entry credits for at least {backlog.needed_ec_min}"
            return CheckResult(False, detail, figures)
        return CheckResult(True, "the balance covers the queued writes", figures)

    return probe


def _backlog_probe(svc: Services) -> Probe:
    limit_s = svc.settings.ready_max_unblocked_age_s

    async def probe() -> CheckResult:
        backlog: Backlog = await asyncio.to_thread(read_backlog, svc.db)
        age_s = backlog.oldest_unblocked_age_s(svc.clock.now())
        figures = {
            "queued_writes": backlog.queued_writes,
            "oldest_unblocked_age_s": round(age_s, 3),
            "failed_writes": backlog.failed_writes,
            "callbacks_pending": backlog.callbacks_pending,
        }
        if age_s > limit_s:
            detail = f"a write has waited {age_s:.0f} s for its block (limit {limit_s:g} s)"
            return CheckResult(False, detail, figures)
        return CheckResult(True, f"{backlog.queued_writes} writes wait for a block", figures)

    return probe
