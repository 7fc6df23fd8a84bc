"""The publishing client's transport is chosen once, when the client is built, and every
call goes through it: the lean pool on a direct route, ``httpx`` when a transport is
injected or a proxy is configured."""

from __future__ import annotations

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from connectors.errors import AuthError, ServiceUnavailable
from connectors.http_keepalive import KeepAlivePool
from connectors.publishing import PublishingClient
from connectors.publishing_transport import HttpxTransport, open_transport
from tests.harness.servers import AppServer

SETTINGS = {"headers": {"user-key": "k"}, "timeout_s": 2.0, "max_connections": 2}


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def test_a_direct_route_gets_the_lean_pool_an_injected_transport_gets_httpx() -> None:
    direct = open_transport("http://127.0.0.1:1/v1", **SETTINGS)  # type: ignore[arg-type]
    mocked = open_transport(
        "http://127.0.0.1:1/v1",
        transport=httpx.MockTransport(lambda r: httpx.Response(200)),
        **SETTINGS,  # type: ignore[arg-type]
    )
    try:
        assert isinstance(direct, KeepAlivePool) and isinstance(mocked, HttpxTransport)
        assert direct.url("/x") == mocked.url("/x") == "http://127.0.0.1:1/v1/x"
    finally:
        direct.close()
        mocked.close()


def test_a_proxied_route_gets_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    transport = open_transport("http://api.example:8090/v1", **SETTINGS)  # type: ignore[arg-type]
    try:
        assert isinstance(transport, HttpxTransport)
    finally:
        transport.close()


SEEN: list[tuple[str, str, str | None]] = []


async def _reads(request: Request) -> JSONResponse:
    """Just enough of the API's reads: ``GET /v1/`` with the right key, else 403 or 404."""
    raw_path = request.scope["raw_path"].decode()
    SEEN.append((request.method, raw_path, request.headers.get("user-key")))
    if request.headers.get("user-key") != "k":
        return JSONResponse({"message": "Authentication Failed"}, status_code=403)
    if request.url.path == "/v1/":
        return JSONResponse({"api_version": "1.0.11", "links": {}})
    return JSONResponse({"error": {"message": "Page Not Found"}}, status_code=404)


READS = Starlette(routes=[Route("/{path:path}", _reads)])


def test_reads_go_over_the_lean_pool_with_the_same_answers_and_errors() -> None:
    SEEN.clear()
    with AppServer(READS) as server, PublishingClient(f"{server.url}/v1", "k") as client:
        assert isinstance(client._transport, KeepAlivePool)
        assert client.info()["api_version"] == "1.0.11"
        assert client.get_chain("../x") is None  # 404 allowed: absent
        with PublishingClient(f"{server.url}/v1", "wrong") as denied, pytest.raises(AuthError):
            denied.info()
    assert ("GET", "/v1/", "k") in SEEN
    assert ("GET", "/v1/chains/..%2Fx", "k") in SEEN  # quoted into one path segment


def test_a_refused_read_is_retryable_and_not_sent() -> None:
    with (
        PublishingClient("http://127.0.0.1:1/v1", "k", timeout_s=2) as client,
        pytest.raises(ServiceUnavailable) as caught,
    ):
        client.info()
    assert caught.value.retryable and caught.value.request_sent is False
