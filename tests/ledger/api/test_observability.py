"""The publishing API's health checks and metrics (ledger/api/observability.py).

In process, on the in-memory twin ledger with a manual clock and the worker driven by the
test, so every figure can be checked exactly as the work moves.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from ledger.api.models import Stage
from tests.harness.metrics import Samples

from .conftest import Api, ApiFactory

HOOK = "http://127.0.0.1:9/hook"


def scrape(api: Api) -> Samples:
    response = api.client.get("/metrics")  # no key needed
    assert response.status_code == 200
    return Samples.parse(response.text)


def ready(api: Api, status: int) -> dict[str, dict[str, Any]]:
    response = api.client.get("/health/ready")
    assert response.status_code == status, response.text
    assert response.json()["service"] == "api"
    return {check["name"]: check for check in response.json()["checks"]}


@pytest.fixture
def hooked(make_api: ApiFactory) -> Api:
    """Callbacks to ``HOOK`` are answered 503: they stay queued."""
    return make_api(
        callback_allowed_hosts=["127.0.0.1"],
        http_transport=httpx.MockTransport(lambda _request: httpx.Response(503)),
        callback_retry_base_s=3600.0,
    )


def test_live_needs_no_key_and_shows_nothing_of_the_accounts(api: Api) -> None:
    for path in ("/health", "/health/live"):
        response = api.client.get(path)
        assert response.status_code == 200
        assert response.json() == {"status": "ok", "service": "api"}
    assert api.key not in api.client.get("/metrics").text


def test_metrics_follow_writes_through_the_stages(hooked: Api) -> None:
    api = hooked
    before = scrape(api)
    assert before.value("notary_api_write_queue_depth") == 0
    chain = api.post_chain([b"metrics"], b"first", callback_url=HOOK).json()["chain_id"]
    for i in range(2):
        assert api.post_entry(chain, [b"doc"], b"n%d" % i).status_code == 202
    api.clock.advance(5.0)
    queued = scrape(api)
    route = "/v1/chains/{chain_id}/entries"
    assert (
        queued.value("notary_api_requests_total", method="POST", route="/v1/chains", status="202")
        == 1
    )
    assert queued.value("notary_api_requests_total", method="POST", route=route, status="202") == 2
    assert queued.value("notary_api_request_seconds_count", method="POST", route=route) == 2
    assert queued.value("notary_api_write_queue_depth") == 3
    assert queued.value("notary_api_unpaid_writes") == 3
    assert queued.value("notary_api_entry_credits_needed_min") == 3 + 10  # one new chain
    assert queued.value("notary_api_oldest_unblocked_write_seconds") >= 5.0
    assert queued.value("notary_api_writes_accepted_total") == 3

    api.run_worker()  # sets the block cursor and submits
    api.run_worker()
    paid = scrape(api)
    assert paid.value("notary_api_unpaid_writes") == 0
    assert paid.value("notary_api_write_queue_depth") == 3  # paid, not yet in a block

    block = api.ledger.mine_block()
    api.clock.advance(2.0)
    api.run_worker()
    blocked = scrape(api)
    assert blocked.value("notary_api_write_queue_depth") == 0
    assert blocked.value("notary_api_oldest_unblocked_write_seconds") == 0
    assert blocked.value("notary_api_stage_seconds_count", stage=Stage.LEDGER.value) == 3
    assert blocked.value("notary_api_stage_seconds_sum", stage=Stage.LEDGER.value) >= 3 * 7.0
    assert blocked.value("notary_api_callbacks_pending") == 1  # the chain's, answered 503

    api.ledger.anchor_block(block.height, "aa" * 32)
    api.clock.advance(1.0)
    api.run_worker()
    anchored = scrape(api)
    assert anchored.value("notary_api_stage_seconds_count", stage=Stage.ANCHOR.value) == 3
    assert anchored.value("notary_api_stage_seconds_sum", stage=Stage.ANCHOR.value) >= 3 * 8.0


def test_ready_reports_the_backlog_and_fails_when_a_write_waits_too_long(
    make_api: ApiFactory,
) -> None:
    api = make_api(ready_max_unblocked_age_s=60.0)
    checks = ready(api, 200)
    assert set(checks) == {"database", "node", "write_backlog"}  # no wallet: a twin ledger
    chain = api.post_chain([b"slow"]).json()["chain_id"]
    api.post_entry(chain, [b"doc"], b"x")
    api.clock.advance(30.0)
    backlog = ready(api, 200)["write_backlog"]
    assert backlog["queued_writes"] == 2 and backlog["oldest_unblocked_age_s"] == 30.0
    api.clock.advance(31.0)
    backlog = ready(api, 503)["write_backlog"]
    assert not backlog["ok"] and "limit 60 s" in backlog["detail"]


def test_not_ready_while_the_ledger_is_unreachable(api: Api) -> None:
    api.ledger.fail_next("heights")
    checks = ready(api, 503)
    assert not checks["node"]["ok"] and "GatewayUnavailable" in checks["node"]["detail"]
    assert checks["database"]["ok"]
    ready(api, 200)


def test_the_worker_counts_when_it_is_enabled(make_api: ApiFactory) -> None:
    api = make_api(worker_enabled=True)
    assert ready(api, 200)["worker"]["ok"]
    assert api.services.worker is not None
    api.services.worker.stop()
    checks = ready(api, 503)
    assert not checks["worker"]["ok"]
