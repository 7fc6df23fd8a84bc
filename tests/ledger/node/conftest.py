"""Fixtures for node tests: a node app on a temporary store with a manual clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from ledger import devnet
from ledger.core.addresses import seed_from_ec_secret
from ledger.core.clock import ManualClock
from ledger.core.keys import SigningKey
from ledger.node.app import create_app
from ledger.node.service import NodeService
from ledger.node.settings import NodeSettings

BLOCK_TIME_S = 10.0
START_S = 1_700_000_000.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class NodeHarness:
    """A node app driven by a manual clock through an in-process HTTP client."""

    client: httpx.AsyncClient
    service: NodeService
    clock: ManualClock
    settings: NodeSettings
    ec_key: SigningKey

    async def rpc(self, method: str, params: Any = None) -> httpx.Response:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
        if params is not None:
            body["params"] = params
        return await self.client.post("/v2", json=body)

    async def call(self, method: str, params: Any = None) -> Any:
        response = await self.rpc(method, params)
        data = response.json()
        assert "error" not in data, data
        return data["result"]

    async def error(self, method: str, params: Any = None) -> dict[str, Any]:
        response = await self.rpc(method, params)
        data = response.json()
        assert "error" in data, data
        assert response.status_code == 400
        return data["error"]

    async def next_block(self) -> int:
        """Advance the clock through a whole block and let the node save it."""
        saved = 0
        for _ in range(10):
            self.clock.advance(BLOCK_TIME_S / 10)
            saved += await self.service.tick()
        return saved


def make_settings(tmp_path: Path) -> NodeSettings:
    return NodeSettings(data_dir=tmp_path / "node", block_time_s=BLOCK_TIME_S)


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[NodeHarness]:
    clock = ManualClock(START_S)
    settings = make_settings(tmp_path)
    app = create_app(settings, clock=clock, produce_blocks=False)
    service: NodeService = app.state.node
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://node") as client:
        yield NodeHarness(
            client,
            service,
            clock,
            settings,
            SigningKey.from_seed(seed_from_ec_secret(devnet.DEV_EC_SECRET)),
        )
    service.store.close()
