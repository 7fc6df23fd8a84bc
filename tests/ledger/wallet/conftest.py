"""Fixtures: a wallet app served through httpx.ASGITransport, with a manual clock."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import nacl.pwhash
import pytest
from starlette.applications import Starlette

from ledger.core.clock import ManualClock
from ledger.wallet import WalletSettings, create_app
from ledger.wallet.store import WalletStore

YELLOW = " ".join(["yellow"] * 12)
PASSPHRASE = "correct horse battery staple"
START_S = 1467708291.898  # 0x0155ba3b3b3a ms, the timestamp of the formats 2.5 vectors
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
        assert response.status_code == 200  # walletd answers errors with HTTP 200 too
        return response.json()

    async def result(self, method: str, params: Any = None) -> Any:
        reply = await self.call(method, params)
        assert "error" not in reply, reply
        return reply["result"]

    async def error(self, method: str, params: Any = None) -> dict[str, Any]:
        reply = await self.call(method, params)
        assert "result" not in reply, reply
        return reply["error"]


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
        *, store: WalletStore | None = None, heights: Any = None, **overrides: Any
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
        )
        transport = httpx.ASGITransport(app=app)
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=transport, base_url="http://wallet") as client,
        ):
            yield Rpc(client, app, clock)

    return factory
