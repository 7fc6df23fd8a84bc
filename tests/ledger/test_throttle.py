"""``ledger.throttle``: token buckets, and failed authentications throttled per address.

The buckets and the throttle run on a manual clock; the JSON-RPC gate is driven through
its ASGI middleware in front of a trivial app (the publishing API's use: tests/ledger/api/
test_auth.py).
"""

from __future__ import annotations

import base64
import logging
from typing import Any

import httpx
import pytest

from ledger.core.clock import ManualClock
from ledger.jsonrpc.auth import (
    THROTTLED_BODY,
    UNAUTHORIZED_BODY,
    BasicAuthGate,
    BasicAuthMiddleware,
)
from ledger.jsonrpc.credentials import BasicCredentials
from ledger.throttle import AuthFailureThrottle, TokenBuckets, retry_after_header

LOG = logging.getLogger("tests.throttle")


def test_a_bucket_allows_its_burst_then_one_per_refill() -> None:
    clock = ManualClock()
    buckets: TokenBuckets[str] = TokenBuckets(clock=clock, rate_per_s=2.0, burst=3)
    assert [buckets.take("a") for _ in range(3)] == [None, None, None]
    assert buckets.take("a") == pytest.approx(0.5)
    assert buckets.wait_s("a") == pytest.approx(0.5)
    assert buckets.take("b") is None  # another key has its own bucket
    clock.advance(0.5)
    assert buckets.wait_s("a") is None and buckets.take("a") is None
    assert buckets.take("a") == pytest.approx(0.5)
    clock.advance(100)
    assert [buckets.take("a") for _ in range(4)][-1] == pytest.approx(0.5)  # burst, not 200


def test_buckets_are_bounded_and_a_dropped_one_starts_full() -> None:
    clock = ManualClock()
    buckets: TokenBuckets[int] = TokenBuckets(clock=clock, rate_per_s=1.0, burst=1, max_keys=2)
    for key in (1, 2, 3):
        assert buckets.take(key) is None
    assert buckets.take(3) is not None  # the newest are kept
    assert buckets.take(1) is None  # the oldest was dropped: full again


def test_rate_zero_never_limits() -> None:
    buckets: TokenBuckets[str] = TokenBuckets(clock=ManualClock(), rate_per_s=0, burst=1)
    assert all(buckets.take("a") is None for _ in range(100))


def test_retry_after_is_whole_seconds_rounded_up() -> None:
    assert [retry_after_header(w) for w in (0.01, 0.5, 1.0, 1.2, 59.9)] == [
        "1",
        "1",
        "1",
        "2",
        "60",
    ]


def test_the_throttle_logs_one_summary_line_per_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOG.name)
    clock = ManualClock()
    throttle = AuthFailureThrottle("the test", clock=clock, logger=LOG, burst=5, log_interval_s=60)
    throttle.failed("10.0.0.1")  # the first refusal is logged at once
    assert len(caplog.records) == 1
    for _ in range(1500):
        if throttle.retry_after("10.0.0.1") is None:
            throttle.failed("10.0.0.1")
    throttle.failed("10.0.0.2")
    assert len(caplog.records) == 1  # 1,501 more refusals: no line yet
    clock.advance(61)
    throttle.failed("10.0.0.3")
    assert len(caplog.records) == 2
    line = caplog.records[-1].getMessage()
    assert line.startswith("refused 1502 requests to the test without valid credentials in 61 s")
    assert "(1496 of them throttled, 429) from 3 addresses: 10.0.0.1 (1500)" in line


# -- the JSON-RPC gate ------------------------------------------------------------------------

CREDENTIALS = BasicCredentials("alice", "right-password")


def _auth(password: str) -> dict[str, str]:
    token = base64.b64encode(f"alice:{password}".encode()).decode()
    return {"authorization": f"Basic {token}"}


async def _ok(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


@pytest.mark.anyio
async def test_the_gate_answers_429_once_an_address_is_over_the_limit_even_to_the_right_password(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="ledger.jsonrpc.auth")
    clock = ManualClock()
    gate = BasicAuthGate(CREDENTIALS, realm="test RPC", paths=("/v2",), clock=clock)
    app = BasicAuthMiddleware(_ok, gate=gate)
    transport = httpx.ASGITransport(app=app, client=("192.0.2.7", 5000))
    async with httpx.AsyncClient(transport=transport, base_url="http://svc") as client:
        statuses = [
            (await client.post("/v2", headers=_auth("guess"))).status_code for _ in range(30)
        ]
        assert statuses == [401] * 10 + [429] * 20
        right = await client.post("/v2", headers=_auth("right-password"))
        assert right.status_code == 429 and right.content == THROTTLED_BODY
        assert right.headers["retry-after"] == "1"
        assert (await client.get("/health")).status_code == 200  # not guarded, not throttled
        clock.advance(1.0)
        assert (await client.post("/v2", headers=_auth("right-password"))).status_code == 200
        wrong = await client.post("/v2", headers=_auth("guess"))
        assert wrong.status_code == 401 and wrong.content == UNAUTHORIZED_BODY
    other = httpx.ASGITransport(app=app, client=("192.0.2.8", 5000))
    async with httpx.AsyncClient(transport=other, base_url="http://svc") as client:
        assert (await client.post("/v2", headers=_auth("right-password"))).status_code == 200
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "192.0.2.7 (1)" in lines[0]  # one line, not 32
    assert "guess" not in caplog.text and "right-password" not in caplog.text
