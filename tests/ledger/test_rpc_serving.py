"""The JSON-RPC services' shared app set-up (``ledger.rpc_serving``): ``/v2`` locked by the
settings' RPC user and password with the service's realm, probes and metrics open, every
call counted under the service's name, errors answered with HTTP 400."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from ledger.jsonrpc.auth import UNAUTHORIZED_BODY
from ledger.jsonrpc.registry import MethodRegistry
from ledger.rpc_serving import create_rpc_app
from ledger.serving import service_lifespan
from ledger.wallet.settings import WalletSettings

PASSWORD = "correct horse battery staple"
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def _registry() -> MethodRegistry:
    registry = MethodRegistry()

    @registry.method("ping")
    def ping() -> str:
        return "pong"

    return registry


async def _client(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://svc") as client:
        yield client


@pytest.mark.anyio
async def test_a_locked_service_answers_401_with_its_realm_and_leaves_metrics_open(
    tmp_path: Path,
) -> None:
    settings = WalletSettings(data_dir=tmp_path, rpc_user="ops", rpc_password=SecretStr(PASSWORD))
    app, observability = create_rpc_app(
        "wallet", _registry(), settings, realm="notary wallet RPC", lifespan=service_lifespan()
    )
    assert observability.service == "wallet"
    async for client in _client(app):
        refused = await client.post("/v2", json=PING)
        assert refused.status_code == 401 and refused.content == UNAUTHORIZED_BODY
        assert refused.headers["www-authenticate"] == 'Basic realm="notary wallet RPC"'
        answered = await client.post("/v2", json=PING, auth=("ops", PASSWORD))
        assert answered.json()["result"] == "pong"
        unknown = {**PING, "method": "no-such-method"}
        assert (await client.post("/v2", json=unknown, auth=("ops", PASSWORD))).status_code == 400
        metrics = (await client.get("/metrics")).text
    assert 'notary_wallet_requests_total{method="ping",outcome="ok"} 1.0' in metrics
    assert 'notary_wallet_requests_total{method="unknown",outcome="error"} 1.0' in metrics
    assert "notary_wallet_http_" in metrics


@pytest.mark.anyio
async def test_an_open_service_needs_no_credentials(tmp_path: Path) -> None:
    settings = WalletSettings(data_dir=tmp_path)
    app, _ = create_rpc_app(
        "anchor", _registry(), settings, realm="notary anchoring RPC", lifespan=service_lifespan()
    )
    async for client in _client(app):
        assert (await client.post("/v2", json=PING)).json()["result"] == "pong"
        assert "notary_anchor_requests_total" in (await client.get("/metrics")).text


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_the_lifespan_given_is_the_apps() -> None:
    events: list[str] = []

    async def run(stop: asyncio.Event) -> None:
        events.append("run")
        await stop.wait()

    settings = WalletSettings(data_dir=Path("/nonexistent"))
    app, _ = create_rpc_app(
        "wallet",
        _registry(),
        settings,
        realm="notary wallet RPC",
        lifespan=service_lifespan(run=run, close=[lambda: events.append("closed")]),
    )

    async def go() -> None:
        async with app.router.lifespan_context(app):
            await asyncio.sleep(0.01)

    asyncio.run(go())
    assert events == ["run", "closed"]
