"""Fixtures: a wallet app served through httpx.ASGITransport, with a manual clock."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import nacl.pwhash
import pytest
from pydantic import BaseModel
from starlette.applications import Starlette

from ledger.core.clock import ManualClock
from ledger.jsonrpc import AsyncJsonRpcClient
from ledger.jsonrpc.registry import MethodRegistry
from ledger.jsonrpc.server import create_jsonrpc_app
from ledger.wallet import WalletSettings, create_app
from ledger.wallet.node_link import NodeLink
from ledger.wallet.store import WalletStore

YELLOW = " ".join(["yellow"] * 12)
PASSPHRASE = "correct horse battery staple"
START_S = 1467708291.898  # 0x0155ba3b3b3a ms, the timestamp of the docs/formats.md §2.5 vectors
FAST_KDF = {
    "kdf_opslimit": nacl.pwhash.argon2id.OPSLIMIT_MIN,
    "kdf_memlimit_bytes": nacl.pwhash.argon2id.MEMLIMIT_MIN,
}


class FixedHeights:
    """A HeightSource that answers a fixed height."""

    def __init__(self, height: int = 42) -> None:
        self.value = height

    async def height(self) -> int:
        return self.value


@dataclass
class Rpc:
    """Calls one wallet app over HTTP; ``call`` returns the whole response object."""

    client: httpx.AsyncClient
    app: Starlette
    clock: ManualClock

    async def call(self, method: str, params: Any = None, *, request_id: int = 1) -> dict[str, Any]:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            body["params"] = params
        response = await self.client.post("/v2", json=body)
        reply = response.json()
        # walletd answers errors with HTTP 400 (clients tell errors apart by the status)
        assert response.status_code == (400 if "error" in reply else 200), reply
        return reply

    async def result(self, method: str, params: Any = None) -> Any:
        reply = await self.call(method, params)
        assert "error" not in reply, reply
        return reply["result"]

    async def error(self, method: str, params: Any = None) -> dict[str, Any]:
        reply = await self.call(method, params)
        assert "result" not in reply, reply
        return reply["error"]


class FakeNode:
    """An in-process node answering the wallet's questions from plain attributes.

    ``rate`` (entry-credit-rate), ``balances`` (address -> (ack, saved)) for
    multiple-fct-balances / multiple-ec-balances, ``height`` (heights). ``link`` is the
    ``NodeLink`` to hand to ``create_app(node=...)``.
    """

    def __init__(self, *, rate: int = 1000) -> None:
        self.rate = rate
        self.height = 42
        self.balances: dict[str, tuple[int, int]] = {}
        registry = MethodRegistry()
        registry.add("entry-credit-rate", lambda: {"rate": self.rate}, blocking=False)
        registry.add("heights", lambda: {"directoryblockheight": self.height}, blocking=False)
        for name in ("multiple-fct-balances", "multiple-ec-balances"):
            registry.add(name, self._multiple, params=_Addresses, blocking=False)
        transport = httpx.ASGITransport(app=create_jsonrpc_app(registry))
        self.client = AsyncJsonRpcClient("http://node/v2", transport=transport)
        self.link = NodeLink(self.client)

    def _multiple(self, params: _Addresses) -> dict[str, Any]:
        found = [self.balances.get(a, (0, 0)) for a in params.addresses]
        items = [{"ack": ack, "saved": saved, "err": ""} for ack, saved in found]
        return {"currentheight": self.height, "lastsavedheight": self.height, "balances": items}


class _Addresses(BaseModel):
    addresses: list[str]


@pytest.fixture
async def fake_node() -> AsyncIterator[FakeNode]:
    node = FakeNode()
    yield node
    await node.client.aclose()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def wallet_file(tmp_path: Path) -> Path:
    return tmp_path / "wallet.sqlite"


@pytest.fixture
def make_rpc(wallet_file: Path) -> Callable[..., Any]:
    """Async context factory: ``async with make_rpc(**settings) as rpc``."""
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def factory(
        *,
        store: WalletStore | None = None,
        heights: Any = None,
        node: Any = None,
        **overrides: Any,
    ) -> AsyncIterator[Rpc]:
        values: dict[str, Any] = {
            "wallet_file": wallet_file,
            "restore_mnemonic": YELLOW,
            **FAST_KDF,
        }
        values.update(overrides)
        clock = ManualClock(START_S)
        app = create_app(
            WalletSettings(**values),
            clock=clock,
            store=store,
            heights=heights or FixedHeights(),
            node=node,
        )
        transport = httpx.ASGITransport(app=app)
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=transport, base_url="http://wallet") as client,
        ):
            yield Rpc(client, app, clock)

    return factory
