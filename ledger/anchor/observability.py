"""The anchoring service's health checks and metrics (docs/jsonrpc.md §1, README
"Operations").

Metrics (``/metrics``), besides the request metrics of ``ledger.observability``
(``notary_anchor_http_requests_total``, ``notary_anchor_http_request_seconds``), the
process's own and ``notary_anchor_requests_total{method,outcome}`` (JSON-RPC calls):

=====================================  ===================================================
``notary_anchor_pow_height``           height of the external chain's tip (the bundled
                                       chain's, or the Bitcoin node's best block)
``notary_anchor_backend_ok``           1 when the last round and the chain's check could
                                       use the external chain, else 0
``notary_anchor_backend_fault``        1 for the ``reason`` label of the current fault
                                       (``AnchorBackendError.reason``), absent when none
``notary_anchor_anchored_height``      highest directory block submitted for anchoring
``notary_anchor_node_height``          the node's directory block height (as of the scrape)
``notary_anchor_lag_blocks``           node height minus anchored height: blocks waiting
``notary_anchor_unrecorded_blocks``    anchors not yet confirmed and recorded (up to 1,000)
=====================================  ===================================================

They are read before each scrape on the service's event loop, the thread its anchoring
rounds use the stores from; the node's height is asked then (if the node does not answer,
``notary_anchor_node_height`` and the lag keep their last values).

Readiness (``/health/ready``): ``database`` (the SQLite files, the bundled proof-of-work
chain's when it runs and the service's state, open and answer), ``node`` (the node answers
``heights``) and ``chain``: the last round's fault (``AnchorService.fault``) and, for a
Bitcoin node, ``BitcoinRpcBackend.check`` (node up, wallet unlocked and funded, no anchor
stuck for ``btc_stuck_blocks``): its detail says why, e.g. ``wallet-locked: ...``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass

from prometheus_client.core import GaugeMetricFamily, Metric

from ledger.anchor.backend import AnchorBackendError, EmbeddedPowBackend
from ledger.anchor.bitcoin_rpc import BitcoinRpcBackend
from ledger.anchor.chain import PowChain
from ledger.anchor.service import AnchorService
from ledger.anchor.settings import AnchorSettings
from ledger.anchor.state import AnchorState
from ledger.jsonrpc.client import AsyncJsonRpcClient
from ledger.observability import (
    Check,
    CheckResult,
    Observability,
    Probe,
    ScrapeCollector,
    gauge_families,
    jsonrpc_check,
    sqlite_file_check,
)

__all__ = ["AnchorFigures", "anchor_observability"]

_UNRECORDED_CAP = 1000


@dataclass
class AnchorFigures:
    """What the last refresh read (heights; -1 before the first block or answer)."""

    pow_height: int = -1
    anchored_height: int = -1
    node_height: int = -1
    unrecorded: int = 0
    fault: str | None = None

    @property
    def lag_blocks(self) -> int:
        """Directory blocks the node has that are not submitted for anchoring yet."""
        return max(0, self.node_height - self.anchored_height)


def anchor_observability(
    *,
    base: Observability,
    settings: AnchorSettings,
    chain: PowChain | None,
    backend: EmbeddedPowBackend | BitcoinRpcBackend,
    service: AnchorService,
    state: AnchorState,
    node: AsyncJsonRpcClient,
) -> Observability:
    """Add the service's figures and checks (module docstring) to ``base``; returns it."""
    figures = AnchorFigures()

    async def refresh() -> None:
        figures.anchored_height = state.last_height()
        figures.unrecorded = len(state.unrecorded_blocks(_UNRECORDED_CAP))
        result = await chain_probe()
        figures.fault = None if result.ok else result.detail.split(":", 1)[0]
        if chain is not None:
            figures.pow_height = _pow_height(chain)
        elif isinstance(backend, BitcoinRpcBackend) and result.ok:
            figures.pow_height = await asyncio.to_thread(backend.tip_height)
        heights = await node.call("heights")
        figures.node_height = int(heights["directoryblockheight"])

    async def chain_probe() -> CheckResult:
        if isinstance(backend, BitcoinRpcBackend):
            try:
                detail = await asyncio.to_thread(backend.check)
            except AnchorBackendError as exc:
                return _fault_result(exc)
        else:
            detail = f"bundled chain {backend.chain} at height {_pow_height(backend.pow_chain)}"
        if service.fault is not None:
            return _fault_result(service.fault)
        return CheckResult(True, detail)

    base.before_scrape.append(refresh)
    ScrapeCollector(lambda: _families(figures), registry=base.registry)
    base.readiness.add(Check("database", _database_probe(settings, chain is not None)))
    base.readiness.add(Check("node", jsonrpc_check(node, "heights", what="node")))
    base.readiness.add(Check("chain", chain_probe))
    base.live = lambda: {"pow_height": -1 if chain is None else _pow_height(chain)}
    return base


#: What a failing ``chain`` check says per ``AnchorBackendError.reason``: the kind of
#: error, never its message (docs/jsonrpc.md §1, readiness).
_FAULTS = {
    "node-unreachable": "the Bitcoin node does not answer",
    "rpc-refused": "the Bitcoin node refused the RPC credentials",
    "wallet-missing": "the wallet is not loaded on the Bitcoin node",
    "wallet-locked": "the wallet is locked (walletpassphrase)",
    "wallet-empty": "the wallet has no funds to pay anchors",
    "fee-too-low": "an anchor waits unmined past btc_stuck_blocks (raise the fee rate)",
    "rejected": "the Bitcoin node refused an anchor transaction",
}


def _fault_result(exc: AnchorBackendError) -> CheckResult:
    return CheckResult(False, f"{exc.reason}: {_FAULTS.get(exc.reason, 'the chain failed')}")


def _pow_height(chain: PowChain) -> int:
    tip = chain.tip()
    return -1 if tip is None else tip.height


def _families(figures: AnchorFigures) -> Iterable[Metric]:
    rows = (
        ("pow_height", "Height of the bundled proof-of-work chain's tip.", figures.pow_height),
        (
            "anchored_height",
            "Highest directory block submitted for anchoring.",
            figures.anchored_height,
        ),
        ("node_height", "The node's directory block height.", figures.node_height),
        ("lag_blocks", "Directory blocks not yet submitted for anchoring.", figures.lag_blocks),
        (
            "unrecorded_blocks",
            "Anchors not yet confirmed and recorded on the ledger (at most 1000 counted).",
            figures.unrecorded,
        ),
    )
    families = gauge_families("notary_anchor", rows)
    families += gauge_families(
        "notary_anchor",
        [("backend_ok", "1 when the external chain can be used.", 0 if figures.fault else 1)],
    )
    fault = GaugeMetricFamily(
        "notary_anchor_backend_fault",
        "1 for the reason the external chain cannot be used now.",
        labels=["reason"],
    )
    if figures.fault:
        fault.add_metric([figures.fault], 1)
    return [*families, fault]


def _database_probe(settings: AnchorSettings, bundled_chain: bool) -> Probe:
    paths = [settings.pow_path] if bundled_chain else []
    paths.append(settings.state_path)
    checks = [sqlite_file_check(path) for path in paths]

    async def probe() -> CheckResult:
        for check in checks:
            result = await check()
            if not result.ok:
                return result
        return CheckResult(True, " and ".join(path.name for path in paths) + " readable")

    return probe
