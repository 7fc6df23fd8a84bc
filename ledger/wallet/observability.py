"""The wallet's health checks and metrics (docs/jsonrpc.md §1, README "Operations").

Metrics (``/metrics``), besides the request metrics of ``ledger.observability``
(``notary_wallet_http_requests_total``, ``notary_wallet_http_request_seconds``) and the
process's own: ``notary_wallet_requests_total{method,outcome}`` (JSON-RPC calls) and
``notary_wallet_locked`` (1 while an encrypted wallet is locked: composing and signing
answer errors until ``unlock-wallet``). No address, key or balance is shown.

Readiness (``/health/ready``): ``database`` (the wallet file opens and answers a query)
and ``node`` (the node answers ``heights``: compose and balances need it). A locked
wallet is ready: being locked is its normal state between unlocks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path

from prometheus_client.core import GaugeMetricFamily, Metric

from ledger.observability import (
    Check,
    CheckResult,
    Observability,
    Probe,
    ScrapeCollector,
    sqlite_file_check,
)
from ledger.wallet.keyring import Keyring
from ledger.wallet.node_link import HeightSource
from ledger.wallet.store import WalletStore

__all__ = ["wallet_observability"]


def wallet_observability(
    *,
    base: Observability,
    keyring: Keyring,
    store: WalletStore,
    db_path: Path | None,
    heights: HeightSource,
) -> Observability:
    """Add the wallet's figures and checks (module docstring) to ``base``; returns it.

    ``db_path``: the wallet file when the wallet owns an SQLite store (checked by opening
    it afresh), None for a store given by the caller (checked through the store).
    """
    ScrapeCollector(lambda: _figures(keyring), registry=base.registry)
    database = sqlite_file_check(db_path) if db_path is not None else _store_probe(store)
    base.readiness.add(Check("database", database))
    base.readiness.add(Check("node", _node_probe(heights)))
    return base


def _figures(keyring: Keyring) -> Iterable[Metric]:
    yield GaugeMetricFamily(
        "notary_wallet_locked",
        "1 while an encrypted wallet is locked (unlock-wallet opens it), else 0.",
        value=1 if keyring.encrypted and keyring.is_locked() else 0,
    )


def _store_probe(store: WalletStore) -> Probe:
    async def probe() -> CheckResult:
        await asyncio.to_thread(store.get_meta, "format")
        return CheckResult(True, "wallet store answers")

    return probe


def _node_probe(heights: HeightSource) -> Probe:
    async def probe() -> CheckResult:
        try:
            height = await heights.height()
        except Exception as exc:  # the link's errors vary with the transport; all mean "down"
            return CheckResult(False, f"node unreachable ({type(exc).__name__})")
        return CheckResult(True, "node reachable", {"height": height})

    return probe
