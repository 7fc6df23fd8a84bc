"""Composition root of the anchoring service: ``create_app(settings)``.

Builds the external chain's backend (the bundled proof-of-work chain, ``pow.sqlite``, or
a Bitcoin Core node's RPC, ``settings.backend``), the service's state (``anchor.sqlite``),
the node client, the ledger writer and the service, and serves JSON-RPC at ``/v2`` (locked
with HTTP basic authentication when ``rpc_user``/``rpc_password`` are set), and open health
checks and metrics (``ledger.anchor.observability``). The lifespan mines the bundled chain
every ``pow_block_time_s`` (a Bitcoin node's chain is mined by its network) and runs an anchoring round every ``poll_interval_s``, with the RFC 3161 and OpenTimestamps
rounds beside it when TSAs or calendars are configured; everything is closed when it ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

import httpx
from starlette.applications import Starlette

from ledger.anchor.backend import EmbeddedPowBackend
from ledger.anchor.bitcoin_rpc import BitcoinRpcBackend
from ledger.anchor.chain import PowChain
from ledger.anchor.mining import MiningProcess
from ledger.anchor.observability import anchor_observability
from ledger.anchor.ots_stamping import OtsStamper, add_ots_observability, ots_access
from ledger.anchor.ots_store import OtsStore
from ledger.anchor.rpc import build_registry
from ledger.anchor.service import AnchorService
from ledger.anchor.settings import AnchorSettings
from ledger.anchor.state import AnchorState
from ledger.anchor.timestamp_rpc import register_timestamp_methods
from ledger.anchor.timestamp_store import TimestampStore
from ledger.anchor.timestamping import TsaRequester, add_timestamp_observability, tsa_access
from ledger.anchor.writer import LedgerWriter
from ledger.core.addresses import seed_from_ec_secret
from ledger.core.clock import Clock, SystemClock
from ledger.core.hexbytes import from_hex
from ledger.core.keys import SigningKey
from ledger.jsonrpc import AsyncJsonRpcClient
from ledger.rpc_serving import create_rpc_app
from ledger.serving import service_lifespan

__all__ = ["AnchorRuntime", "build_runtime", "create_app"]


@dataclass
class AnchorRuntime:
    """Everything the anchoring service runs on; ``close()`` releases the stores.

    ``chain`` is the bundled proof-of-work chain (None with a Bitcoin node's backend)."""

    settings: AnchorSettings
    chain: PowChain | None
    backend: EmbeddedPowBackend | BitcoinRpcBackend
    state: AnchorState
    node: AsyncJsonRpcClient
    service: AnchorService
    mining: MiningProcess | None = None
    #: RFC 3161 tokens of the anchored blocks (``ledger.anchor.timestamping``); the
    #: requester only when TSAs are configured.
    timestamps: TimestampStore | None = None
    stamper: TsaRequester | None = None
    #: OpenTimestamps proofs of the anchored blocks (``ledger.anchor.ots_stamping``); the
    #: stamper only when calendars are configured.
    ots: OtsStore | None = None
    ots_stamper: OtsStamper | None = None

    async def run(self, stop: asyncio.Event) -> None:
        """Mine (the bundled chain), anchor (and ask the TSAs) until ``stop`` is set."""
        loops: list[Coroutine[Any, Any, None]] = [self.service.run(stop)]
        if isinstance(self.backend, EmbeddedPowBackend):  # a Bitcoin node's chain is mined
            loops.append(
                self.backend.run_miner(
                    stop,
                    interval_s=self.settings.pow_block_time_s,
                    depth=self.settings.confirmations,
                    idle_interval_s=self.settings.pow_idle_block_time_s,
                )
            )
        if self.stamper is not None:
            loops.append(self.stamper.run(stop, interval_s=self.settings.poll_interval_s))
        if self.ots_stamper is not None:
            loops.append(self.ots_stamper.run(stop, interval_s=self.settings.poll_interval_s))
        await asyncio.gather(*loops)

    async def aclose(self) -> None:
        await self.node.aclose()
        if self.stamper is not None:
            await self.stamper.aclose()
        if self.ots_stamper is not None:
            await self.ots_stamper.aclose()
        if self.timestamps is not None:
            self.timestamps.close()
        if self.ots is not None:
            self.ots.close()
        self.state.close()
        if self.chain is not None:
            self.chain.close()
        if isinstance(self.backend, BitcoinRpcBackend):
            self.backend.close()
        if self.mining is not None:
            self.mining.close()


def build_runtime(
    settings: AnchorSettings,
    *,
    clock: Clock | None = None,
    node_transport: httpx.AsyncBaseTransport | None = None,
) -> AnchorRuntime:
    """Open the stores (mining the genesis block of the bundled chain on first start) and
    wire the service.

    Raises:
        OSError: ``btc_rpc_password_file`` cannot be read.
        CredentialsError: the Bitcoin node's RPC credentials are incomplete or malformed.
        ValueError: the TSA or calendar settings do not hold together (``tsa_access``,
            ``ots_access``).

    ``node_transport`` replaces the HTTP transport to the node (``httpx.ASGITransport``
    around an in-process node app in tests).
    """
    clock = clock or SystemClock()
    mining: MiningProcess | None = None
    chain: PowChain | None = None
    backend: EmbeddedPowBackend | BitcoinRpcBackend
    if settings.backend == "bitcoin-rpc":
        backend = BitcoinRpcBackend(
            settings.btc_rpc_url,
            wallet=settings.btc_wallet,
            coin=settings.btc_coin,
            access=settings.btc_access(),
            fee_rate_sat_vb=settings.btc_fee_rate_sat_vb,
            stuck_blocks=settings.btc_stuck_blocks,
            timeout_s=settings.btc_timeout_s,
        )
    else:
        mining = MiningProcess() if settings.pow_mining == "process" else None
        chain = PowChain(
            settings.pow_path,
            params=settings.pow_params(),
            clock=clock,
            synchronous=settings.sqlite_synchronous,
            miner=None if mining is None else mining.mine,
        )
        chain.open()
        backend = EmbeddedPowBackend(chain)
    state = AnchorState(settings.state_path, synchronous=settings.sqlite_synchronous)
    node = AsyncJsonRpcClient(
        settings.node_url,
        timeout_s=settings.node_timeout_s,
        transport=node_transport,
        access=settings.node_access(),
    )
    ec_key = SigningKey.from_seed(seed_from_ec_secret(settings.ec_secret.get_secret_value()))
    seed = from_hex(settings.anchor_secret.get_secret_value(), "anchor_secret", size=32)
    signer = SigningKey.from_seed(seed)
    writer = LedgerWriter(node, ec_key=ec_key, clock=clock)
    service = AnchorService(
        settings, backend=backend, state=state, node=node, writer=writer, signer=signer
    )
    timestamps = TimestampStore(settings.state_path, synchronous=settings.sqlite_synchronous)
    access = tsa_access(settings)
    stamper = None
    if access is not None:
        stamper = TsaRequester(access, anchors=state, store=timestamps, clock=clock)
    ots = OtsStore(settings.state_path, synchronous=settings.sqlite_synchronous)
    calendars = ots_access(settings)
    ots_stamper = None
    if calendars is not None:
        ots_stamper = OtsStamper(calendars, anchors=state, store=ots, clock=clock)
    return AnchorRuntime(
        settings,
        chain,
        backend,
        state,
        node,
        service,
        mining,
        timestamps,
        stamper,
        ots,
        ots_stamper,
    )


def create_app(
    settings: AnchorSettings,
    *,
    clock: Clock | None = None,
    node_transport: httpx.AsyncBaseTransport | None = None,
    run_loops: bool = True,
) -> Starlette:
    """The service's ASGI app; the runtime is ``app.state.anchor`` (an ``AnchorRuntime``),
    the health checks and metrics ``app.state.observability``.

    ``run_loops=False`` leaves mining and anchoring to the caller (tests call
    ``chain.mine_block()`` and ``service.step()`` themselves).
    """
    runtime = build_runtime(settings, clock=clock, node_transport=node_transport)

    registry = build_registry(runtime.service, runtime.chain)
    assert runtime.timestamps is not None and runtime.ots is not None
    register_timestamp_methods(
        registry,
        runtime.timestamps,
        runtime.ots,
        tsas=len(settings.tsa_urls),
        calendars=runtime.ots_stamper is not None,
    )
    app, observability = create_rpc_app(
        "anchor",
        registry,
        settings,
        realm="notary anchoring RPC",
        lifespan=service_lifespan(run=runtime.run if run_loops else None, close=[runtime.aclose]),
    )
    app.state.anchor = runtime
    app.state.observability = anchor_observability(
        base=observability,
        settings=settings,
        chain=runtime.chain,
        backend=runtime.backend,
        service=runtime.service,
        state=runtime.state,
        node=runtime.node,
    )
    if runtime.stamper is not None:
        add_timestamp_observability(app.state.observability, runtime.stamper)
    if runtime.ots_stamper is not None:
        add_ots_observability(app.state.observability, runtime.ots_stamper)
    return app
