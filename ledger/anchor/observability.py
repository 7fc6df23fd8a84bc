"""The anchoring service's health checks and metrics (docs/jsonrpc.md §1, README
"Operations").

Metrics (``/metrics``), besides the request metrics of ``ledger.observability``
(``notary_anchor_http_requests_total``, ``notary_anchor_http_request_seconds``), the
process's own and ``notary_anchor_requests_total{method,outcome}`` (JSON-RPC calls):

=====================================  ===================================================
``notary_anchor_pow_height``           height of the bundled proof-of-work chain's tip
``notary_anchor_anchored_height``      highest directory block submitted for anchoring
``notary_anchor_node_height``          the node's directory block height (as of the scrape)
``notary_anchor_lag_blocks``           node height minus anchored height: blocks waiting
``notary_anchor_unrecorded_blocks``    anchors not yet confirmed and recorded (up to 1,000)
=====================================  ===================================================

They are read before each scrape on the service's event loop, the thread its anchoring
rounds use the stores from; the node's height is asked then (if the node does not answer,
``notary_anchor_node_height`` and the lag keep their last values).

Readiness (``/health/ready``): ``database`` (both SQLite files, the proof-of-work chain and
the service's state, open and answer) and ``node`` (the node answers ``heights``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from prometheus_client.core import Metric

from ledger.anchor.chain import PowChain
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

    @property
    def lag_blocks(self) -> int:
        """Directory blocks the node has that are not submitted for anchoring yet."""
        return max(0, self.node_height - self.anchored_height)


def anchor_observability(
    *,
    base: Observability,
    settings: AnchorSettings,
    chain: PowChain,
    state: AnchorState,
    node: AsyncJsonRpcClient,
) -> Observability:
    """Add the service's figures and checks (module docstring) to ``base``; returns it."""
    figures = AnchorFigures()

    async def refresh() -> None:
        tip = chain.tip()
        figures.pow_height = -1 if tip is None else tip.height
        figures.anchored_height = state.last_height()
        figures.unrecorded = len(state.unrecorded_blocks(_UNRECORDED_CAP))
        heights = await node.call("heights")
        figures.node_height = int(heights["directoryblockheight"])

    base.before_scrape.append(refresh)
    ScrapeCollector(lambda: _families(figures), registry=base.registry)
    base.readiness.add(Check("database", _database_probe(settings)))
    base.readiness.add(Check("node", jsonrpc_check(node, "heights", what="node")))
    base.live = lambda: {"pow_height": _pow_height(chain)}
    return base


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
    return gauge_families("notary_anchor", rows)


def _database_probe(settings: AnchorSettings) -> Probe:
    chain_file = sqlite_file_check(settings.pow_path)
    state_file = sqlite_file_check(settings.state_path)

    async def probe() -> CheckResult:
        for check in (chain_file, state_file):
            result = await check()
            if not result.ok:
                return result
        return CheckResult(
            True, f"{settings.pow_path.name} and {settings.state_path.name} readable"
        )

    return probe
