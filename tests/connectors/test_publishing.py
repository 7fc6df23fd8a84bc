"""Tests of connectors.publishing against a fake API (httpx.MockTransport) and a loopback server."""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx
import pytest

from connectors.errors import (
    AuthError,
    ConnectorError,
    InvalidResponse,
    NotFound,
    RequestRejected,
    ServiceUnavailable,
)
from connectors.publishing import NewEntry, PublishingClient, from_base64, to_base64
from tests.harness.servers import HttpServer

BASE = "http://publishing.test/v1"
KEY = "test-key"


class FakeApi:
    """Just enough of the REST API (docs/rest-api.md): chains, entries, user-key auth, 404s."""

    def __init__(self) -> None:
        self.chains: dict[str, dict[str, Any]] = {}
        self.entries: dict[tuple[str, str], dict[str, Any]] = {}
        self.requests: list[httpx.Request] = []
        self.lock = threading.Lock()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        with self.lock:
            self.requests.append(request)
        key = request.headers.get("user-key")
        if key is None:
            return httpx.Response(403, json={"message": "Authentication Parameters Missing"})
        if key != KEY:
            return httpx.Response(403, json={"message": "Authentication Failed"})
        parts = request.url.path.removeprefix("/v1").strip("/").split("/")
        body = json.loads(request.content) if request.content else None
        return self.route(request.method, parts, body)

    def route(self, method: str, parts: list[str], body: Any) -> httpx.Response:
        if method == "GET" and parts == [""]:
            return httpx.Response(200, json={"api_version": "1.0.11", "links": {}})
        if method == "POST" and parts == ["chains"]:
            return self.create_chain(body)
        if method == "POST" and parts == ["chains", "search"]:
            for chain in self.chains.values():
                if chain["external_ids"] == body["external_ids"]:
                    return httpx.Response(200, json=chain)
            return httpx.Response(404, json={"message": "Page Not Found"})
        if parts[0] == "chains" and len(parts) >= 2 and parts[1] not in self.chains:
            return httpx.Response(404, json={"message": "Page Not Found"})
        if method == "GET" and len(parts) == 2:
            return httpx.Response(200, json=self.chains[parts[1]])
        if method == "POST" and parts[2:] == ["entries"]:
            return self.create_entry(parts[1], body)
        if method == "GET" and len(parts) == 4 and (parts[1], parts[3]) in self.entries:
            return httpx.Response(200, json=self.entries[(parts[1], parts[3])])
        return httpx.Response(404, json={"message": "No Mapping Rule Matched"})

    def create_chain(self, body: dict[str, Any]) -> httpx.Response:
        ext = [base64.b64decode(x) for x in body["external_ids"]]
        chain_id = hashlib.sha256(b"".join(hashlib.sha256(x).digest() for x in ext)).hexdigest()
        self.chains[chain_id] = {"chain_id": chain_id, "external_ids": body["external_ids"]}
        return httpx.Response(202, json={"chain_id": chain_id})

    def create_entry(self, chain_id: str, body: dict[str, Any]) -> httpx.Response:
        if body["content"] == to_base64(b"reject me"):
            return httpx.Response(422, json={"detail": "content refused"})
        raw = json.dumps(body, sort_keys=True).encode()
        entry_hash = hashlib.sha256(chain_id.encode() + raw).hexdigest()
        entry = {"entry_hash": entry_hash, "chain_id": chain_id, "stage": "multi_az"}
        entry |= {"external_ids": body["external_ids"], "content": body["content"]}
        with self.lock:
            self.entries[(chain_id, entry_hash)] = entry
        return httpx.Response(202, json={"entry_hash": entry_hash})


@pytest.fixture
def api() -> FakeApi:
    return FakeApi()


@pytest.fixture
def client(api: FakeApi):
    with PublishingClient(BASE, KEY, transport=httpx.MockTransport(api)) as publishing:
        yield publishing


def test_base64_helpers_round_trip_and_reject_garbage() -> None:
    assert to_base64(b"\x00\xffhello") == "AP9oZWxsbw=="
    assert from_base64("AP9oZWxsbw==") == b"\x00\xffhello"
    with pytest.raises(InvalidResponse):
        from_base64("not base64!")


def test_info_sends_user_key(client: PublishingClient, api: FakeApi) -> None:
    assert client.info()["api_version"] == "1.0.11"
    assert api.requests[0].headers["user-key"] == KEY
    assert str(api.requests[0].url) == f"{BASE}/"


def test_create_and_get_chain(client: PublishingClient, api: FakeApi) -> None:
    chain_id = client.create_chain([b"notary", b"\x00coll"], b"first entry")
    body = json.loads(api.requests[0].content)
    assert body == {"external_ids": ["bm90YXJ5", "AGNvbGw="], "content": "Zmlyc3QgZW50cnk="}
    assert api.requests[0].url.path == "/v1/chains"
    chain = client.get_chain(chain_id)
    assert chain is not None
    assert [from_base64(x) for x in chain["external_ids"]] == [b"notary", b"\x00coll"]
    assert client.search_chains([b"notary", b"\x00coll"])["chain_id"] == chain_id
    assert client.search_chains([b"nothing"]) is None
    assert client.get_chain("f" * 64) is None


def test_create_and_get_entry_with_callbacks(client: PublishingClient, api: FakeApi) -> None:
    chain_id = client.create_chain([b"c"], b"")
    entry_hash = client.create_entry(
        chain_id,
        [b"sha256", bytes(32)],
        b"payload",
        callback_url="http://127.0.0.1:9/cb?doc=1",
        callback_stages=["ledger", "anchor"],
    )
    body = json.loads(api.requests[-1].content)
    assert body["callback_url"] == "http://127.0.0.1:9/cb?doc=1"
    assert body["callback_stages"] == ["ledger", "anchor"]
    entry = client.get_entry(chain_id, entry_hash)
    assert entry is not None and from_base64(entry["content"]) == b"payload"
    assert entry["stage"] == "multi_az"  # extra fields are kept
    assert client.get_entry(chain_id, "0" * 64) is None


def test_identifiers_cannot_escape_their_path_segment(client: PublishingClient, api) -> None:
    assert client.get_chain("../../admin") is None
    assert api.requests[-1].url.raw_path == b"/v1/chains/..%2F..%2Fadmin"


def test_errors_are_typed(client: PublishingClient) -> None:
    with pytest.raises(NotFound) as not_found:
        client.create_entry("e" * 64, [], b"x")
    assert not_found.value.status_code == 404 and not_found.value.message == "Page Not Found"
    chain_id = client.create_chain([b"c"], b"")
    with pytest.raises(RequestRejected) as rejected:
        client.create_entry(chain_id, [], b"reject me")
    assert rejected.value.status_code == 422
    assert rejected.value.message == "content refused"
    assert rejected.value.body == {"detail": "content refused"}
    assert not rejected.value.retryable


def test_auth_errors(api: FakeApi) -> None:
    with (
        PublishingClient(BASE, "wrong", transport=httpx.MockTransport(api)) as bad,
        pytest.raises(AuthError) as failed,
    ):
        bad.info()
    assert failed.value.status_code == 403 and failed.value.message == "Authentication Failed"


@pytest.mark.parametrize(
    ("response", "error"),
    [
        (httpx.Response(500, text="boom"), ServiceUnavailable),
        (httpx.Response(503, json={"error": {"message": "maintenance"}}), ServiceUnavailable),
        (httpx.Response(401, text="no session"), AuthError),
        (httpx.Response(415, text="Unsupported Media Type"), RequestRejected),
        (httpx.Response(202, text="not json"), InvalidResponse),
        (httpx.Response(202, json={"entry_hash": "short"}), InvalidResponse),
        (httpx.Response(202, json=["a", "list"]), InvalidResponse),
    ],
)
def test_http_failures_map_to_connector_errors(response: httpx.Response, error: type) -> None:
    transport = httpx.MockTransport(lambda request: response)
    with (
        PublishingClient(BASE, KEY, transport=transport) as publishing,
        pytest.raises(error) as caught,
    ):
        publishing.create_entry("c" * 64, [], b"x")
    assert caught.value.retryable == (error is ServiceUnavailable)


def test_5xx_message_comes_from_body() -> None:
    response = httpx.Response(503, json={"error": {"message": "maintenance"}})
    with (
        PublishingClient(BASE, KEY, transport=httpx.MockTransport(lambda r: response)) as c,
        pytest.raises(ServiceUnavailable, match="maintenance") as caught,
    ):
        c.info()
    assert caught.value.status_code == 503


def test_connect_error_is_retryable_and_not_sent() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with (
        PublishingClient(BASE, KEY, transport=httpx.MockTransport(refuse)) as publishing,
        pytest.raises(ServiceUnavailable) as caught,
    ):
        publishing.info()
    assert caught.value.retryable and caught.value.request_sent is False
    assert isinstance(caught.value.__cause__, httpx.ConnectError)


def test_read_timeout_may_have_been_sent() -> None:
    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    with (
        PublishingClient(BASE, KEY, transport=httpx.MockTransport(slow)) as publishing,
        pytest.raises(ServiceUnavailable) as caught,
    ):
        publishing.create_chain([b"x"], b"")
    assert caught.value.request_sent is True


def test_real_network_refusal_is_service_unavailable() -> None:
    with (
        PublishingClient("http://127.0.0.1:1/v1", KEY, timeout_s=2) as publishing,
        pytest.raises(ServiceUnavailable),
    ):
        publishing.info()


# -- many entries --------------------------------------------------------------------------


def test_create_entries_keeps_order_and_captures_failures(client: PublishingClient) -> None:
    chain_id = client.create_chain([b"c"], b"")
    entries = [NewEntry((b"doc", str(i).encode()), f"content {i}".encode()) for i in range(30)]
    entries[7] = NewEntry((), b"reject me")
    results = client.create_entries(chain_id, entries, concurrency=6)
    assert len(results) == 30
    assert isinstance(results[7].error, RequestRejected) and results[7].entry_hash is None
    for i, result in enumerate(results):
        if i == 7:
            continue
        assert result.ok
        entry = client.get_entry(chain_id, result.entry_hash)
        assert from_base64(entry["content"]) == f"content {i}".encode()
    assert client.create_entries(chain_id, []) == []
    with pytest.raises(ValueError):
        client.create_entries(chain_id, entries, concurrency=0)


def test_create_entries_runs_concurrently_up_to_the_limit() -> None:
    in_flight = 0
    peak = 0
    lock = threading.Lock()

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal in_flight, peak
        if request.url.path.endswith("/bulk"):  # an API without the bulk route: one post each
            return httpx.Response(404, json={"error": {"message": "No Mapping Rule Matched"}})
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
        time.sleep(0.02)
        with lock:
            in_flight -= 1
        return httpx.Response(202, json={"entry_hash": hashlib.sha256(request.content).hexdigest()})

    with PublishingClient(BASE, KEY, transport=httpx.MockTransport(handler)) as publishing:
        entries = [NewEntry((), str(i).encode()) for i in range(40)]
        results = publishing.create_entries("c" * 64, entries, concurrency=4)
    assert all(r.ok for r in results)
    assert peak == 4


def test_create_entries_captures_outage_per_entry() -> None:
    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("down", request=request)

    with PublishingClient(BASE, KEY, transport=httpx.MockTransport(down)) as publishing:
        results = publishing.create_entries("c" * 64, [NewEntry((), b"1"), NewEntry((), b"2")])
    assert [type(r.error) for r in results] == [ServiceUnavailable, ServiceUnavailable]
    assert all(isinstance(r.error, ConnectorError) and r.error.retryable for r in results)


class _KeepAliveHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    peers: set[tuple[str, int]] = set()

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        length = int(self.headers["content-length"])
        body = self.rfile.read(length)
        type(self).peers.add(self.client_address)
        payload = json.dumps({"entry_hash": hashlib.sha256(body).hexdigest()}).encode()
        status = 202
        if self.path.endswith("/bulk"):  # an API without the bulk route: one post each
            status, payload = 404, b'{"error": {"message": "No Mapping Rule Matched"}}'
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


def test_create_entries_reuses_pooled_connections_on_loopback() -> None:
    _KeepAliveHandler.peers = set()
    with (
        HttpServer(_KeepAliveHandler) as server,
        PublishingClient(f"{server.url}/v1", KEY, max_connections=3) as publishing,
    ):
        entries = [NewEntry((b"n",), str(i).encode()) for i in range(60)]
        results = publishing.create_entries("c" * 64, entries, concurrency=3)
    assert all(r.ok for r in results) and len({r.entry_hash for r in results}) == 60
    assert 1 <= len(_KeepAliveHandler.peers) <= 3  # 60 posts over at most 3 connections


def test_rate_limited_post_is_a_retryable_error() -> None:
    import httpx as _httpx

    from connectors.errors import ServiceUnavailable
    from connectors.publishing import PublishingClient as _Client

    def handler(request: _httpx.Request) -> _httpx.Response:
        return _httpx.Response(
            429, headers={"retry-after": "1"}, json={"error": {"message": "slow down"}}
        )

    client = _Client("http://api/v1", "k", transport=_httpx.MockTransport(handler))
    try:
        client.create_entry("ab" * 32, [b"x"], b"y")
    except ServiceUnavailable as exc:
        assert exc.retryable
    else:
        raise AssertionError("a 429 must raise ServiceUnavailable")
