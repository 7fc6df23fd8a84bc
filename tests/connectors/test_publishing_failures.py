"""The publishing client's view of writes the API gave up (docs/rest-api.md §3, §5)."""

from __future__ import annotations

from urllib.parse import parse_qsl

import httpx
import pytest

from connectors.errors import InvalidResponse, RequestRejected
from connectors.publishing import PublishingClient, WriteFailure, write_failure

CHAIN = "c" * 64
FAILED = [f"{i:064x}" for i in range(5)]


def listing(request: httpx.Request) -> httpx.Response:
    """Operation 7 with ``stage=failed`` over ``FAILED``, paged as the API pages."""
    query = dict(parse_qsl(request.url.query.decode()))
    if request.url.path != f"/v1/chains/{CHAIN}/entries":
        return httpx.Response(404, json={"error": {"code": 404, "message": "No such chain"}})
    assert query["stage"] == "failed"
    start, size = int(query["offset"]), int(query["limit"])
    items = [{"entry_hash": h, "links": {}} for h in FAILED[start : start + size]]
    return httpx.Response(200, json={"items": items, "count": len(FAILED)})


def test_failed_entries_reads_every_page() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return listing(request)

    with PublishingClient("http://api.test/v1", "k", transport=httpx.MockTransport(handler)) as c:
        assert c.failed_entries(CHAIN, page_size=2) == FAILED
        assert c.failed_entries("d" * 64) == []  # unknown chain
    assert [dict(parse_qsl(r.url.query.decode()))["offset"] for r in seen[:3]] == ["0", "2", "4"]


def test_an_api_without_the_stage_filter_is_a_rejected_request() -> None:
    def old_api(_request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, json={"error": {"code": 400, "message": "bad stage"}})

    client = PublishingClient("http://api.test/v1", "k", transport=httpx.MockTransport(old_api))
    with client, pytest.raises(RequestRejected):
        client.failed_entries(CHAIN)


def test_write_failure_of_an_entry_read() -> None:
    failed = {
        "stage": "failed",
        "failure": {"reason": "refused", "failed_at": "2026-01-01T00:00:00.000Z", "attempts": 1},
    }
    assert write_failure(failed) == WriteFailure("refused", "2026-01-01T00:00:00.000Z", 1)
    assert write_failure({"stage": "multi_az"}) is None
    legacy = {"stage": "failed", "failure": {"reason": "old", "failed_at": None, "attempts": 20}}
    assert write_failure(legacy) == WriteFailure("old", None, 20)
    with pytest.raises(InvalidResponse):
        write_failure({"stage": "failed"})
