"""``PublishingClient.create_entries`` through the bulk write (docs/rest-api.md §5.2): against
the real publishing API on loopback (twin ledger), and against fakes for an older API
(fallback to one post per entry) and for answers the real one does not give."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from connectors.errors import (
    AuthError,
    InvalidResponse,
    RequestRejected,
    ServiceUnavailable,
)
from connectors.publishing import NewEntry, PublishingClient
from ledger.api.accounts import create_account
from ledger.api.app import create_app, services_of
from ledger.api.sandbox.memory_ledger import InMemoryLedger
from ledger.api.services import Services
from ledger.api.settings import ApiSettings
from ledger.core.clock import ManualClock
from ledger.core.entry import Entry
from tests.harness.servers import AppServer

CHAIN = "c" * 64


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """A proxy in the environment would send posts through httpx, not the lean pool."""
    for name in ("http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


@pytest.fixture
def real_api(tmp_path: Path) -> Iterator[tuple[str, str, Services]]:
    """The publishing API on loopback: (base URL, a key, its services)."""
    settings = ApiSettings(
        data_dir=tmp_path,
        ec_address="EC2DKSYyRcNWf7RS963VFYgMExo1824HVeCfQ9PGPmNzwrcmgm2r",
        worker_enabled=False,
        callback_secret="s",
        bulk_max_entries=50,
    )
    app = create_app(settings, gateway=InMemoryLedger(), clock=ManualClock(1_700_000_000.0))
    with AppServer(app) as served:
        svc = services_of(app)
        with svc.db.write() as session:
            key = create_account(session, "pipeline")[1]
        yield f"{served.url}/v1", key, svc


def _entries(n: int, tag: bytes = b"doc") -> list[NewEntry]:
    return [NewEntry((tag, b"%d" % i), b"content %d" % i) for i in range(n)]


def _hash(chain_id: str, entry: NewEntry) -> str:
    return Entry(bytes.fromhex(chain_id), entry.external_ids, entry.content).hash().hex()


def test_entries_go_in_bulk_requests_with_their_own_errors(
    real_api: tuple[str, str, Services],
) -> None:
    url, key, svc = real_api
    with PublishingClient(url, key, bulk_max_entries=40) as client:
        chain_id = client.create_chain([b"bulk collection"], b"")
        entries = _entries(100)
        entries[7] = NewEntry((), b"x" * 10_300)  # above the 10,240-byte payload
        writes_before = svc.writer.stats.batches
        results = client.create_entries(chain_id, entries, concurrency=3)
        assert svc.writer.stats.batches - writes_before <= 3  # 40 + 40 + 20, not 100
        assert isinstance(results[7].error, RequestRejected)
        assert results[7].error.status_code == 422 and not results[7].error.retryable
        for i, result in enumerate(results):
            if i != 7:
                assert result.entry_hash == _hash(chain_id, entries[i])
        again = client.create_entries(chain_id, entries[:3])  # idempotent
        assert [r.entry_hash for r in again] == [r.entry_hash for r in results[:3]]
        listed = client._request("GET", f"/chains/{chain_id}/entries?limit=1000")
        assert listed["count"] == 100  # the first entry and the 99 accepted, once each
        with PublishingClient(url, "wrong key") as stranger:
            denied = stranger.create_entries(chain_id, entries[:2])
        assert all(isinstance(r.error, AuthError) for r in denied)
        unknown = client.create_entries("ab" * 32, entries[:2])
        assert [r.error.status_code for r in unknown] == [422, 422]  # type: ignore[union-attr]


def test_a_bulk_above_the_apis_limits_is_posted_entry_by_entry(
    real_api: tuple[str, str, Services],
) -> None:
    url, key, _svc = real_api
    # 60 entries per request: above this API's 50 (422 for the request); then one each
    with PublishingClient(url, key, bulk_max_entries=60) as client:
        chain_id = client.create_chain([b"limits"], b"")
        entries = _entries(60, b"lim")
        results = client.create_entries(chain_id, entries)
        assert [r.entry_hash for r in results] == [_hash(chain_id, e) for e in entries]
        assert client._bulk.use_route  # still used for the next batch


class _OldApi:
    """An API without the bulk route (404 No Mapping Rule Matched), counting requests."""

    def __init__(self, bulk_status: int = 404) -> None:
        self.paths: list[str] = []
        self.bulk_status = bulk_status

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.paths.append(request.url.path)
        if request.url.path.endswith("/bulk"):
            error = {"code": self.bulk_status, "name": "No Mapping Rule Matched", "message": "-"}
            return httpx.Response(self.bulk_status, json={"error": error})
        return httpx.Response(202, json={"entry_hash": f"{len(self.paths):064x}"})


@pytest.mark.parametrize("status", [404, 405])
def test_an_older_api_gets_single_posts_from_then_on(status: int) -> None:
    old = _OldApi(status)
    with PublishingClient("http://old.test/v1", "k", transport=httpx.MockTransport(old)) as client:
        first = client.create_entries(CHAIN, _entries(3))
        second = client.create_entries(CHAIN, _entries(2))
    assert all(r.ok for r in first + second)
    bulk = [p for p in old.paths if p.endswith("/bulk")]
    assert len(bulk) == 1  # asked once, remembered
    assert len(old.paths) == 1 + 3 + 2


def test_bulk_false_never_asks_for_the_route() -> None:
    old = _OldApi()
    transport = httpx.MockTransport(old)
    with PublishingClient("http://old.test/v1", "k", transport=transport, bulk=False) as client:
        assert all(r.ok for r in client.create_entries(CHAIN, _entries(4)))
    assert not any(p.endswith("/bulk") for p in old.paths)


def _answering(status: int, body: Any) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        if isinstance(body, bytes):
            return httpx.Response(status, content=body)
        return httpx.Response(status, json=body)

    return httpx.MockTransport(handler)


@pytest.mark.parametrize(
    ("status", "body", "error_type", "retryable"),
    [
        (503, {"error": {"message": "stopping"}}, ServiceUnavailable, True),
        (429, {"error": {"message": "slow down"}}, ServiceUnavailable, True),
        (403, {"error": {"message": "Authentication Failed"}}, AuthError, False),
        (400, {"error": {"message": "bad"}}, RequestRejected, False),
        (202, {"items": [{"entry_hash": "0" * 64}]}, InvalidResponse, False),  # 1 item for 2
        (202, b"<html>", InvalidResponse, False),
    ],
)
def test_a_refused_or_garbled_bulk_request_fails_each_entry(
    status: int, body: Any, error_type: type, retryable: bool
) -> None:
    with PublishingClient("http://x.test/v1", "k", transport=_answering(status, body)) as client:
        results = client.create_entries(CHAIN, _entries(2))
    assert [type(r.error) for r in results] == [error_type, error_type]
    assert all(r.error is not None and r.error.retryable is retryable for r in results)


def test_item_errors_map_as_single_posts_do() -> None:
    def item(code: int) -> dict[str, Any]:
        return {"error": {"code": code, "name": "n", "message": f"m{code}"}}

    items = [{"entry_hash": "A" * 64}, item(422), item(507), item(403), {"entry_hash": "no"}, 7]
    transport = _answering(202, {"items": items})
    with PublishingClient("http://x.test/v1", "k", transport=transport) as client:
        results = client.create_entries(CHAIN, _entries(len(items)))
    assert results[0].entry_hash == "a" * 64
    kinds = [type(r.error) for r in results[1:]]
    assert kinds == [
        RequestRejected,
        ServiceUnavailable,
        AuthError,
        InvalidResponse,
        InvalidResponse,
    ]
    assert isinstance(results[1].error, RequestRejected)
    assert results[1].error.body == items[1] and str(results[1].error) == "HTTP 422: m422"


def test_chunks_respect_the_byte_limit_and_keep_order() -> None:
    sizes: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sizes.append(len(request.content))
        entries = json.loads(request.content)["entries"]
        return httpx.Response(
            202,
            json={
                "items": [
                    {"entry_hash": e["content"].encode().hex()[:64].ljust(64, "0")} for e in entries
                ]
            },
        )

    transport = httpx.MockTransport(handler)
    with PublishingClient(
        "http://x.test/v1", "k", transport=transport, bulk_max_bytes=2000, bulk_max_entries=100
    ) as client:
        entries = [NewEntry((), bytes([65 + i % 26]) * 300) for i in range(20)]
        results = client.create_entries(CHAIN, entries, concurrency=4)
    assert len(sizes) > 1 and max(sizes) <= 2000
    assert [r.ok for r in results] == [True] * 20
    assert len({r.entry_hash for r in results}) == 20
