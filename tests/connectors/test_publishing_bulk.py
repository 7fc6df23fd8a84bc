"""``PublishingClient.create_entries`` over its lean keep-alive pool (a loopback server):
the same bodies, answers and error types as ``create_entry`` over httpx.

The fake API here has no bulk route (it answers 404 No Mapping Rule Matched, as an older
API does), so every entry is one post; the bulk route is tested in
``test_publishing_bulk_route.py``."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from connectors.errors import (
    AuthError,
    ConnectorError,
    InvalidResponse,
    NotFound,
    RequestRejected,
    ServiceUnavailable,
)
from connectors.publishing import CallbackStage, NewEntry, PublishingClient, to_base64
from tests.harness.servers import HttpServer

KEY = "bulk-key"
CHAIN = "c" * 64

# content -> (status, body) the fake API answers instead of 202 with the entry hash.
SCRIPTED: dict[bytes, tuple[int, bytes]] = {
    b"rejected": (422, b'{"detail": "content refused"}'),
    b"limited": (429, b'{"error": {"message": "slow down"}}'),
    b"broken": (503, b"maintenance"),
    b"not json": (202, b"<html>"),
    b"no hash": (202, b'{"entry_hash": "short"}'),
}


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """A proxy in the environment would send posts through httpx, not the pool under test."""
    for name in ("http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


class _Api(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    bodies: list[dict[str, Any]]
    lock = threading.Lock()

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        raw = self.rfile.read(int(self.headers["content-length"]))
        if self.path.endswith("/entries/bulk"):  # an API without the bulk route
            self._answer(404, '{"error": {"message": "No Mapping Rule Matched"}}')
            return
        body = json.loads(raw)
        with self.lock:
            self.bodies.append(body | {"_path": self.path, "_key": self.headers["user-key"]})
        content = json.dumps(body).encode()
        status, answer = 202, json.dumps({"entry_hash": hashlib.sha256(content).hexdigest()})
        if self.headers["user-key"] != KEY:
            status, answer = 403, '{"message": "Authentication Failed"}'
        elif not self.path.startswith(f"/v1/chains/{CHAIN}/"):
            status, answer = 404, '{"message": "Page Not Found"}'
        else:
            scripted = SCRIPTED.get(_content(body))
            if scripted is not None:
                status, answer = scripted[0], scripted[1].decode()
        self._answer(status, answer)

    def _answer(self, status: int, answer: str) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(answer.encode())))
        self.end_headers()
        self.wfile.write(answer.encode())

    def log_message(self, *args: object) -> None:
        pass


def _content(body: dict[str, Any]) -> bytes:
    import base64

    return base64.b64decode(body["content"])


@contextmanager
def api() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    bodies: list[dict[str, Any]] = []
    with HttpServer(type("Api", (_Api,), {"bodies": bodies})) as server:
        yield f"{server.url}/v1", bodies


def outcome(client: PublishingClient, content: bytes, *, bulk: bool) -> Any:
    """What one post gives: the entry hash, or (error type, message, retryable)."""
    if bulk:
        (result,) = client.create_entries(CHAIN, [NewEntry((b"x",), content)])
        if result.ok:
            return result.entry_hash
        error: ConnectorError = result.error  # type: ignore[assignment]
    else:
        try:
            return client.create_entry(CHAIN, [b"x"], content)
        except ConnectorError as exc:
            error = exc
    return type(error), str(error), error.retryable, getattr(error, "status_code", None)


@pytest.mark.parametrize("content", [b"fine", *SCRIPTED])
def test_each_answer_gives_what_create_entry_gives(content: bytes) -> None:
    with api() as (url, _bodies), PublishingClient(url, KEY) as client:
        assert outcome(client, content, bulk=True) == outcome(client, content, bulk=False)


def test_answers_map_to_the_expected_errors() -> None:
    with api() as (url, _bodies), PublishingClient(url, KEY) as client:
        entries = [NewEntry((b"x",), c) for c in [b"fine", *SCRIPTED]]
        results = client.create_entries(CHAIN, entries, concurrency=3)
        with PublishingClient(url, "wrong") as other:
            (denied,) = other.create_entries(CHAIN, entries[:1])
        (unknown,) = client.create_entries("d" * 64, entries[:1])
    kinds = [type(r.error) if r.error else None for r in results]
    assert kinds == [
        None,
        RequestRejected,
        ServiceUnavailable,
        ServiceUnavailable,
        InvalidResponse,
        InvalidResponse,
    ]
    assert [r.error.retryable for r in results[1:]] == [False, True, True, False, False]
    assert isinstance(results[1].error, RequestRejected)
    assert results[1].error.body == {"detail": "content refused"}
    assert isinstance(denied.error, AuthError) and isinstance(unknown.error, NotFound)


def test_many_posts_keep_input_order_and_send_the_same_bodies_as_create_entry() -> None:
    stages: list[CallbackStage] = ["ledger"]
    with api() as (url, bodies), PublishingClient(url, KEY, max_connections=4) as client:
        entries = [NewEntry((b"doc", str(i).encode()), f"content {i}".encode()) for i in range(200)]
        results = client.create_entries(
            CHAIN,
            entries,
            concurrency=8,
            callback_url="http://127.0.0.1:9/cb",
            callback_stages=stages,
        )
        single = client.create_entry(
            CHAIN,
            [b"doc", b"0"],
            b"content 0",
            callback_url="http://127.0.0.1:9/cb",
            callback_stages=stages,
        )
    assert all(r.ok for r in results)
    assert results[0].entry_hash == single  # same body, so the fake API's same hash
    by_content = {b["content"]: b for b in bodies[:-1]}
    for i, result in enumerate(results):
        body = by_content[to_base64(f"content {i}".encode())]
        assert body["external_ids"] == [to_base64(b"doc"), to_base64(str(i).encode())]
        assert body["callback_url"] == "http://127.0.0.1:9/cb"
        assert body["callback_stages"] == ["ledger"]
        assert body["_path"] == f"/v1/chains/{CHAIN}/entries" and body["_key"] == KEY
        plain = {k: v for k, v in body.items() if not k.startswith("_")}
        assert result.entry_hash == hashlib.sha256(json.dumps(plain).encode()).hexdigest()


def test_outage_is_captured_per_entry_and_not_sent() -> None:
    with PublishingClient("http://127.0.0.1:1/v1", KEY, timeout_s=2) as client:  # refused
        results = client.create_entries(CHAIN, [NewEntry((), b"1"), NewEntry((), b"2")])
    assert all(isinstance(r.error, ServiceUnavailable) for r in results)
    assert all(r.error.retryable and r.error.request_sent is False for r in results)  # type: ignore[union-attr]


def _tag(chain_id: str, entry: NewEntry, body: dict[str, Any]) -> dict[str, Any]:
    """Adds a field to every entry body through the documented hook."""
    return body | {"callback_url": "x"}


def test_the_entry_body_hook_is_honoured_by_bulk_and_single_posts() -> None:
    with api() as (url, bodies):
        with PublishingClient(url, KEY, entry_body_hook=_tag) as tagging:
            results = tagging.create_entries(CHAIN, [NewEntry((), b"a"), NewEntry((), b"b")])
            tagging.create_entry(CHAIN, [], b"c")
        assert [b["callback_url"] for b in bodies] == ["x", "x", "x"]
    assert all(r.ok for r in results)
