"""The publishing client's transport is chosen once, when the client is built, and every
call goes through it: the lean pool on a direct route, ``httpx`` when a transport is
injected or a proxy is configured."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler

import httpx
import pytest

from connectors.errors import AuthError, ServiceUnavailable
from connectors.http_keepalive import KeepAlivePool
from connectors.publishing import PublishingClient
from connectors.publishing_transport import HttpxTransport, open_transport
from tests.harness.servers import HttpServer

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


class _Reads(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list[tuple[str, str, str | None]] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        type(self).seen.append(("GET", self.path, self.headers.get("user-key")))
        if self.headers.get("user-key") != "k":
            self._answer(403, {"message": "Authentication Failed"})
        elif self.path == "/v1/":
            self._answer(200, {"api_version": "1.0.11", "links": {}})
        else:
            self._answer(404, {"error": {"message": "Page Not Found"}})

    def _answer(self, status: int, body: object) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


def test_reads_go_over_the_lean_pool_with_the_same_answers_and_errors() -> None:
    _Reads.seen = []
    with HttpServer(_Reads) as server, PublishingClient(f"{server.url}/v1", "k") as client:
        assert isinstance(client._transport, KeepAlivePool)
        assert client.info()["api_version"] == "1.0.11"
        assert client.get_chain("../x") is None  # 404 allowed: absent
        with PublishingClient(f"{server.url}/v1", "wrong") as denied, pytest.raises(AuthError):
            denied.info()
    assert ("GET", "/v1/", "k") in _Reads.seen
    assert ("GET", "/v1/chains/..%2Fx", "k") in _Reads.seen  # one quoted path segment


def test_a_refused_read_is_retryable_and_not_sent() -> None:
    with (
        PublishingClient("http://127.0.0.1:1/v1", "k", timeout_s=2) as client,
        pytest.raises(ServiceUnavailable) as caught,
    ):
        client.info()
    assert caught.value.retryable and caught.value.request_sent is False
