"""HTTP basic authentication of the JSON-RPC services (docs/jsonrpc.md §1.1).

The credentials object (header encoding, the server's constant-time check, no secret in
``repr``), the gate in front of a Starlette JSON-RPC app and of the node's own ASGI app
(401 with ``WWW-Authenticate`` and no detail, ``/health`` left open), and the one client
sending credentials from ``RpcAccess`` or from the URL, never quoting them in errors.
"""

from __future__ import annotations

import base64
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ledger.core.clock import ManualClock
from ledger.jsonrpc.auth import UNAUTHORIZED_BODY, BasicAuthGate
from ledger.jsonrpc.client import AsyncJsonRpcClient, JsonRpcClient
from ledger.jsonrpc.credentials import BasicCredentials, CredentialsError, RpcAccess
from ledger.jsonrpc.errors import JsonRpcProtocolError
from ledger.jsonrpc.registry import MethodRegistry
from ledger.jsonrpc.server import create_jsonrpc_app
from ledger.node.app import create_app as create_node_app
from ledger.node.settings import NodeSettings
from tests.harness.servers import AppServer

PASSWORD = "s3cret:with-colon"
CREDENTIALS = BasicCredentials("alice", PASSWORD)
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def _header(user: str, password: str, scheme: str = "Basic") -> bytes:
    return f"{scheme} ".encode() + base64.b64encode(f"{user}:{password}".encode())


# -- credentials ----------------------------------------------------------------------------


def test_the_header_is_rfc7617_and_the_password_never_shows() -> None:
    assert CREDENTIALS.authorization() == _header("alice", PASSWORD)
    assert PASSWORD not in repr(CREDENTIALS) and PASSWORD not in str(CREDENTIALS)
    assert PASSWORD not in repr(RpcAccess(CREDENTIALS))
    assert BasicCredentials.from_text(f" alice:{PASSWORD}\n") == CREDENTIALS
    assert BasicCredentials.from_text(CREDENTIALS.to_text()).password == PASSWORD


@pytest.mark.parametrize(
    ("user", "password"),
    [("", "x"), ("a:b", "x"), ("a\nb", "x"), ("a", ""), ("a", "x\r\ny"), ("a", "x\x7f")],
)
def test_malformed_credentials_are_refused_without_quoting_them(user: str, password: str) -> None:
    with pytest.raises(CredentialsError) as raised:
        BasicCredentials(user, password)
    assert password not in str(raised.value) or not password


def test_credentials_text_needs_a_colon() -> None:
    with pytest.raises(CredentialsError, match="user:password"):
        BasicCredentials.from_text("only-a-password")


def test_user_and_password_go_together() -> None:
    with pytest.raises(CredentialsError, match="both"):
        RpcAccess.from_parts("alice", None)
    with pytest.raises(CredentialsError, match="both"):
        RpcAccess.from_parts(None, "pw")
    assert RpcAccess.from_parts(None, None) == RpcAccess()


@pytest.mark.parametrize(
    ("header", "accepted"),
    [
        (_header("alice", PASSWORD), True),
        (_header("alice", PASSWORD, "basic"), True),  # the scheme has no case (RFC 7617)
        (b"  " + _header("alice", PASSWORD) + b" ", True),
        (_header("alice", PASSWORD + "x"), False),
        (_header("alice", PASSWORD[:-1]), False),
        (_header("bob", PASSWORD), False),
        (_header("alice", PASSWORD, "Bearer"), False),
        (b"Basic", False),
        (b"Basic not-base64!", False),
        (b"", False),
        (None, False),
    ],
)
def test_matches_only_the_exact_credentials(header: bytes | None, accepted: bool) -> None:
    assert CREDENTIALS.matches(header) is accepted


def test_a_settings_error_never_quotes_the_password() -> None:
    with pytest.raises(ValidationError) as raised:
        NodeSettings(rpc_password="hunter2-very-secret")
    assert "hunter2-very-secret" not in str(raised.value)
    assert "rpc_user / rpc_password" in str(raised.value)


def test_the_realm_is_a_plain_token() -> None:
    with pytest.raises(ValueError, match="realm"):
        BasicAuthGate(CREDENTIALS, realm='evil"realm')


# -- the gate in front of a Starlette JSON-RPC app -------------------------------------------


def _registry() -> MethodRegistry:
    registry = MethodRegistry()

    @registry.method("ping")
    def ping() -> str:
        return "pong"

    return registry


async def _health(request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok"})


def _locked_app() -> Any:
    return create_jsonrpc_app(
        _registry(),
        credentials=CREDENTIALS,
        realm="notary test RPC",
        extra_routes=[Route("/health", _health)],
    )


@pytest.fixture
async def locked() -> Any:
    transport = httpx.ASGITransport(app=_locked_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://svc") as client:
        yield client


def _assert_refused(response: httpx.Response, realm: str) -> None:
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == f'Basic realm="{realm}"'
    assert response.content == UNAUTHORIZED_BODY
    assert PASSWORD not in response.text


@pytest.mark.anyio
@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"authorization": _header("alice", "wrong").decode()},
        {"authorization": _header("mallory", PASSWORD).decode()},
        {"authorization": "Bearer " + PASSWORD},
    ],
)
async def test_without_the_credentials_the_rpc_route_answers_401(
    locked: httpx.AsyncClient, headers: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for verb in ("POST", "GET"):
        _assert_refused(
            await locked.request(verb, "/v2", json=PING, headers=headers), "notary test RPC"
        )
    assert "without valid credentials" in caplog.text
    assert PASSWORD not in caplog.text and "wrong" not in caplog.text


@pytest.mark.anyio
async def test_with_the_credentials_it_answers_and_health_stays_open(
    locked: httpx.AsyncClient,
) -> None:
    good = await locked.post("/v2", json=PING, auth=("alice", PASSWORD))
    assert good.status_code == 200 and good.json()["result"] == "pong"
    assert (await locked.get("/health")).json() == {"status": "ok"}


@pytest.mark.anyio
async def test_an_open_app_needs_nothing() -> None:
    app = create_jsonrpc_app(_registry())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://svc") as client:
        assert (await client.post("/v2", json=PING)).json()["result"] == "pong"


# -- the node's own ASGI app ------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_node_locks_v2_and_leaves_health_open(tmp_path: Path) -> None:
    settings = NodeSettings(data_dir=tmp_path / "node", rpc_user="alice", rpc_password=PASSWORD)
    app = create_node_app(settings, clock=ManualClock(1_700_000_000.0), produce_blocks=False)
    heights = {"jsonrpc": "2.0", "id": 1, "method": "heights"}
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://node") as client:
            _assert_refused(await client.post("/v2", json=heights), "notary node RPC")
            wrong = await client.post("/v2", json=heights, auth=("alice", "nope"))
            _assert_refused(wrong, "notary node RPC")
            head = await client.head("/v2")
            assert head.status_code == 401 and head.content == b""
            good = await client.post("/v2", json=heights, auth=("alice", PASSWORD))
            assert good.status_code == 200 and "directoryblockheight" in good.json()["result"]
            assert (await client.get("/health")).status_code == 200
            assert (await client.get("/elsewhere")).status_code == 404
            assert (await client.put("/v2", auth=("alice", PASSWORD))).status_code == 405
    finally:
        app.state.node.close()


# -- the client ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Any:
    with AppServer(_locked_app()) as running:
        yield running


def test_the_client_sends_access_credentials(server: AppServer) -> None:
    with JsonRpcClient(f"{server.url}/v2", access=RpcAccess(CREDENTIALS)) as client:
        assert client.call("ping") == "pong"


def test_credentials_in_the_url_work_and_never_reach_a_log_or_error(
    server: AppServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # httpx logs each request's URL at INFO
    host = server.url.removeprefix("http://")
    with JsonRpcClient(f"http://alice:{PASSWORD}@{host}/v2") as client:
        assert client.call("ping") == "pong"
    refused = JsonRpcClient(f"http://alice:wrong-{PASSWORD}@{host}/v2")
    with refused, pytest.raises(JsonRpcProtocolError) as raised:
        refused.call("ping")
    assert raised.value.status_code == 401
    assert PASSWORD not in str(raised.value) and "alice" not in str(raised.value)
    assert "HTTP Request" in caplog.text and PASSWORD not in caplog.text


@pytest.mark.anyio
async def test_the_async_client_is_refused_without_them(server: AppServer) -> None:
    async with AsyncJsonRpcClient(f"{server.url}/v2") as client:
        with pytest.raises(JsonRpcProtocolError) as raised:
            await client.call("ping")
    assert raised.value.status_code == 401
    access = RpcAccess(CREDENTIALS)
    async with AsyncJsonRpcClient(f"{server.url}/v2", access=access) as client:
        assert await client.call("ping") == "pong"
