"""The node's health checks and metrics (ledger/node/observability.py, docs/jsonrpc.md §1)."""

from __future__ import annotations

import sqlite3

import pytest

from ledger import devnet
from ledger.node.store import StoreError
from tests.harness.metrics import Samples

from .conftest import BLOCK_TIME_S, NodeHarness

pytestmark = pytest.mark.anyio


async def scrape(node: NodeHarness) -> Samples:
    response = await node.client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return Samples.parse(response.text)


async def ready_checks(node: NodeHarness, status: int) -> dict[str, dict[str, object]]:
    response = await node.client.get("/health/ready")
    assert response.status_code == status, response.text
    body = response.json()
    assert body["status"] == ("ready" if status == 200 else "not_ready")
    assert body["service"] == "node"
    return {check["name"]: check for check in body["checks"]}


async def test_live_and_the_old_health_path_answer_with_the_height(node: NodeHarness) -> None:
    for path in ("/health/live", "/health"):
        response = await node.client.get(path)
        assert response.status_code == 200
        assert response.json() == {"status": "ok", "service": "node", "height": 0}
    await node.next_block()
    assert (await node.client.get("/health")).json()["height"] == 1
    head = await node.client.head("/health/live")
    assert head.status_code == 200 and head.content == b""


async def test_probes_take_only_get_and_head(node: NodeHarness) -> None:
    for path in ("/health", "/health/live", "/health/ready", "/metrics"):
        response = await node.client.post(path, content=b"{}")
        assert response.status_code == 405
        assert response.headers["allow"] == "GET, HEAD"
    assert (await node.client.get("/healthz")).status_code == 404


async def test_ready_while_blocks_close_and_not_when_they_stop(node: NodeHarness) -> None:
    checks = await ready_checks(node, 200)
    assert checks["database"]["ok"] and checks["blocks"]["ok"]
    limit_s = 3 * BLOCK_TIME_S + 5
    node.clock.advance(limit_s + 1)  # the clock runs on, no tick closes a block
    checks = await ready_checks(node, 503)
    assert not checks["blocks"]["ok"] and checks["database"]["ok"]
    assert float(checks["blocks"]["seconds_since_last_block"]) > limit_s  # type: ignore[arg-type]
    await node.service.tick()  # the overdue block closes
    await ready_checks(node, 200)


async def test_not_ready_when_the_database_file_is_gone(node: NodeHarness) -> None:
    db = node.settings.db_path
    moved = db.with_name("moved.sqlite")
    db.rename(moved)
    try:
        checks = await ready_checks(node, 503)
        assert not checks["database"]["ok"]
        assert "missing" in str(checks["database"]["detail"])
    finally:
        moved.rename(db)
    await ready_checks(node, 200)


class _FailingBegin:
    """The store's write connection, refusing to begin a transaction (a failing disk)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, *args: object) -> object:
        if sql.startswith("BEGIN"):
            raise sqlite3.OperationalError("disk I/O error (simulated)")
        return self.conn.execute(sql, *args)


async def test_not_ready_while_its_writes_fail(node: NodeHarness) -> None:
    store = node.service.store
    real = store._write_conn
    store._write_conn = _FailingBegin(real)  # type: ignore[assignment]
    try:
        with pytest.raises(StoreError):
            await store.barrier()
    finally:
        store._write_conn = real
    checks = await ready_checks(node, 503)
    assert not checks["database"]["ok"]
    assert "write" in str(checks["database"]["detail"])
    await store.barrier()  # a commit that succeeds clears it
    await ready_checks(node, 200)


async def test_metrics_move_with_the_work(node: NodeHarness) -> None:
    before = await scrape(node)
    assert before.value("notary_node_block_height") == 0
    assert before.total("notary_node_requests_total") == 0
    first = await node.publish_chain([b"metrics"], b"first")
    await node.publish_entry(first.chain_id, b"second")
    await node.error("no-such-method")
    during = await scrape(node)
    assert during.value("notary_node_requests_total", method="commit-chain", outcome="ok") == 1
    assert during.value("notary_node_requests_total", method="reveal-entry", outcome="ok") == 1
    assert during.value("notary_node_requests_total", method="unknown", outcome="error") == 1
    assert during.value("notary_node_entries_accepted_total") == 2
    assert during.value("notary_node_open_block_entries") == 2
    http = during.value("notary_node_http_request_seconds_count", method="POST", route="/v2")
    assert http == 5  # four writes and the unknown method
    assert (
        during.value("notary_node_http_requests_total", method="POST", route="/v2", status="400")
        == 1
    )
    node.clock.advance(3.0)
    assert (await scrape(node)).value("notary_node_seconds_since_last_block") >= 3.0
    await node.next_block()
    after = await scrape(node)
    assert after.value("notary_node_block_height") == 1
    assert after.value("notary_node_open_block_entries") == 0
    assert after.value("notary_node_seconds_since_last_block") < BLOCK_TIME_S
    assert after.value("notary_node_store_commits_total") > during.value(
        "notary_node_store_commits_total"
    )
    assert "process_resident_memory_bytes" in after.names()


async def test_an_alias_counts_under_the_methods_name(node: NodeHarness) -> None:
    await node.call("factoid-balance", {"address": devnet.DEV_FCT_ADDRESS})
    samples = await scrape(node)
    assert samples.value("notary_node_requests_total", method="coin-balance", outcome="ok") == 1
    assert samples.value("notary_node_requests_total", method="factoid-balance", outcome="ok") == 0
