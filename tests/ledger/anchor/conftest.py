"""An in-process node and anchoring service on temporary stores, driven by one manual clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from ledger import devnet
from ledger.anchor.app import AnchorRuntime
from ledger.anchor.app import create_app as create_anchor_app
from ledger.anchor.settings import AnchorSettings
from ledger.core.addresses import seed_from_ec_secret
from ledger.core.clock import ManualClock
from ledger.core.commit import CommitChain, CommitEntry
from ledger.core.entry import Entry
from ledger.core.keys import SigningKey
from ledger.node.app import create_app as create_node_app
from ledger.node.service import NodeService
from ledger.node.settings import NodeSettings

BLOCK_TIME_S = 10.0
DIFFICULTY_BITS = 8
CONFIRMATIONS = 2
WINDOW_BLOCKS = 4


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class RpcFailed(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error)
        self.error = error


@dataclass
class Network:
    """Node + anchoring service; ``block()``, ``mine()`` and ``anchor_round()`` move time."""

    node_client: httpx.AsyncClient
    anchor_client: httpx.AsyncClient
    node: NodeService
    anchor: AnchorRuntime
    clock: ManualClock
    ec_key: SigningKey
    node_transport: httpx.AsyncBaseTransport

    async def rpc(self, client: httpx.AsyncClient, method: str, params: Any = None) -> Any:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
        if params is not None:
            body["params"] = params
        data = (await client.post("/v2", json=body)).json()
        if "error" in data:
            raise RpcFailed(data["error"])
        return data["result"]

    async def call(self, method: str, params: Any = None) -> Any:
        return await self.rpc(self.node_client, method, params)

    async def anchor_call(self, method: str, params: Any = None) -> Any:
        return await self.rpc(self.anchor_client, method, params)

    async def block(self) -> None:
        """Advance through one directory block; the node saves it."""
        for _ in range(10):
            self.clock.advance(BLOCK_TIME_S / 10)
            await self.node.tick()

    def mine(self, count: int = 1) -> None:
        for _ in range(count):
            self.clock.advance(0.1)
            self.anchor.chain.mine_block()

    async def anchor_round(self) -> Any:
        return await self.anchor.service.step()

    async def anchor_everything(self) -> None:
        """Anchor every saved block, record it, and save the records in a block."""
        await self.anchor_round()
        self.mine(CONFIRMATIONS)
        await self.anchor_round()
        await self.block()

    def now_ms(self) -> int:
        return int(self.clock.now() * 1000)

    async def publish_chain(self, ext_ids: list[bytes], content: bytes = b"") -> Entry:
        first = Entry.first_entry(ext_ids, content)
        commit = CommitChain.create(self.ec_key, first, timestamp_ms=self.now_ms())
        await self.call("commit-chain", {"message": commit.to_hex()})
        await self.call("reveal-chain", {"entry": first.marshal().hex()})
        return first

    async def publish_entry(self, entry: Entry) -> Entry:
        commit = CommitEntry.create(self.ec_key, entry, timestamp_ms=self.now_ms())
        await self.call("commit-entry", {"message": commit.to_hex()})
        await self.call("reveal-entry", {"entry": entry.marshal().hex()})
        return entry


def anchor_settings(tmp_path: Path, **overrides: Any) -> AnchorSettings:
    values: dict[str, Any] = {
        "data_dir": tmp_path / "anchor",
        "node_url": "http://node/v2",
        "pow_difficulty_bits": DIFFICULTY_BITS,
        "confirmations": CONFIRMATIONS,
        "window_blocks": WINDOW_BLOCKS,
        "sqlite_synchronous": "NORMAL",
    }
    values.update(overrides)
    return AnchorSettings(**values)


@pytest.fixture
async def network(tmp_path: Path) -> AsyncIterator[Network]:
    clock = ManualClock(1_700_000_000.0)
    node_app = create_node_app(
        NodeSettings(
            data_dir=tmp_path / "node", block_time_s=BLOCK_TIME_S, sqlite_synchronous="NORMAL"
        ),
        clock=clock,
        produce_blocks=False,
    )
    node_transport = httpx.ASGITransport(app=node_app)
    anchor_app = create_anchor_app(
        anchor_settings(tmp_path), clock=clock, node_transport=node_transport, run_loops=False
    )
    runtime: AnchorRuntime = anchor_app.state.anchor
    anchor_transport = httpx.ASGITransport(app=anchor_app)
    async with (
        httpx.AsyncClient(transport=node_transport, base_url="http://node") as node_client,
        httpx.AsyncClient(transport=anchor_transport, base_url="http://anchor") as anchor_client,
    ):
        yield Network(
            node_client,
            anchor_client,
            node_app.state.node,
            runtime,
            clock,
            SigningKey.from_seed(seed_from_ec_secret(devnet.DEV_EC_SECRET)),
            node_transport,
        )
    await runtime.aclose()
    node_app.state.node.store.close()
