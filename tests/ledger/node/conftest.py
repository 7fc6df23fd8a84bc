"""Fixtures for node tests: a node app on a temporary store with a manual clock."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from ledger import devnet
from ledger.core.addresses import seed_from_ec_secret, seed_from_fct_secret
from ledger.core.clock import ManualClock
from ledger.core.commit import CommitChain, CommitEntry
from ledger.core.entry import Entry
from ledger.core.keys import SigningKey
from ledger.node.app import create_app
from ledger.node.service import NodeService
from ledger.node.settings import NodeSettings

BLOCK_TIME_S = 10.0
START_S = 1_700_000_000.0
EC_KEY = SigningKey.from_seed(seed_from_ec_secret(devnet.DEV_EC_SECRET))
FCT_KEY = SigningKey.from_seed(seed_from_fct_secret(devnet.DEV_FCT_SECRET))


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
        assert response.status_code == 200
        return data["result"]

    async def error(self, method: str, params: Any = None) -> dict[str, Any]:
        response = await self.rpc(method, params)
        data = response.json()
        assert "error" in data, data
        assert response.status_code == 400
        return data["error"]

    async def next_minute(self) -> int:
        self.clock.advance(BLOCK_TIME_S / 10)
        return await self.service.tick()

    async def next_block(self) -> int:
        """Advance the clock through the rest of the block and let the node save it."""
        saved = 0
        while not saved:
            saved += await self.next_minute()
        return saved

    async def publish_chain(self, ext_ids: list[bytes], content: bytes = b"") -> Entry:
        first = Entry.first_entry(ext_ids, content)
        commit = CommitChain.create(self.ec_key, first, timestamp_ms=self.service.now_ms())
        await self.call("commit-chain", {"message": commit.marshal().hex()})
        await self.call("reveal-chain", {"entry": first.marshal().hex()})
        return first

    async def publish(self, entry: Entry) -> CommitEntry:
        """Commit ``entry`` (paid with ``ec_key``, stamped now), reveal it; the commit."""
        commit = CommitEntry.create(self.ec_key, entry, timestamp_ms=self.service.now_ms())
        await self.call("commit-entry", {"message": commit.marshal().hex()})
        await self.call("reveal-entry", {"entry": entry.marshal().hex()})
        return commit

    async def publish_entry(self, chain_id: bytes, content: bytes) -> Entry:
        entry = Entry(chain_id, (b"doc",), content)
        await self.publish(entry)
        return entry


def make_settings(tmp_path: Path) -> NodeSettings:
    return NodeSettings(data_dir=tmp_path / "node", block_time_s=BLOCK_TIME_S)


@contextlib.asynccontextmanager
async def open_node(settings: NodeSettings, clock: ManualClock) -> AsyncIterator[NodeHarness]:
    """A node over ``settings.data_dir``; closing it and opening again is a clean restart."""
    app = create_app(settings, clock=clock, produce_blocks=False)
    service: NodeService = app.state.node
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://node") as client:
            yield NodeHarness(client, service, clock, settings, EC_KEY)
    finally:
        service.close()


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[NodeHarness]:
    async with open_node(make_settings(tmp_path), ManualClock(START_S)) as harness:
        yield harness
