"""Health and metrics of the four real services on loopback, during a run and with the node
stopped (README "Operations", docs/jsonrpc.md §1, docs/rest-api.md §5)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import httpx
import pytest

from ledger.anchor.app import create_app as create_anchor_app
from ledger.api.app import create_app as create_api_app
from ledger.node.app import create_app as create_node_app
from ledger.stack import Stack
from ledger.wallet.app import create_app as create_wallet_app
from tests.harness.metrics import Samples
from tests.harness.servers import AppServer
from tests.harness.stack import running_stack, stack_settings
from tests.harness.waiting import wait_until

pytestmark = pytest.mark.e2e


def scrape(client: httpx.Client, url: str) -> Samples:
    response = client.get(f"{url}/metrics")
    assert response.status_code == 200
    return Samples.parse(response.text)


def write_entries(client: httpx.Client, api: str, key: str, name: bytes, count: int) -> None:
    """Create a chain named ``name`` through the API, then ``count`` entries (each 202)."""
    body = {"external_ids": [base64.b64encode(name).decode()], "content": ""}
    chain = client.post(f"{api}/v1/chains", json=body, headers={"user-key": key})
    chain_id = chain.json()["chain_id"]
    for i in range(count):
        entry = {"external_ids": [base64.b64encode(b"%d" % i).decode()], "content": ""}
        answer = client.post(
            f"{api}/v1/chains/{chain_id}/entries", json=entry, headers={"user-key": key}
        )
        assert answer.status_code == 202


def readiness(client: httpx.Client, url: str) -> tuple[int, dict[str, dict[str, Any]]]:
    response = client.get(f"{url}/health/ready")
    return response.status_code, {c["name"]: c for c in response.json()["checks"]}


def test_metrics_move_with_a_run_of_writes(stack: Stack) -> None:
    s = stack.settings
    api, node = s.url(s.api_port, ""), s.url(s.node_port, "")
    wallet, anchor = s.url(s.wallet_port, ""), s.url(s.anchor_port, "")
    key = stack.api_key_file.read_text().strip()
    with httpx.Client(timeout=10.0) as client:
        for url in (api, node, wallet, anchor):
            assert readiness(client, url)[0] == 200, url
        start_height = scrape(client, node).value("notary_node_block_height")
        write_entries(client, api, key, b"metrics-run", 20)
        queued = scrape(client, api)
        route = "/v1/chains/{chain_id}/entries"
        assert (
            queued.value("notary_api_requests_total", method="POST", route=route, status="202")
            == 20
        )
        assert queued.value("notary_api_write_queue_depth") > 0  # accepted, no block yet
        assert queued.value("notary_api_entry_credit_balance") > 0

        def drained() -> Samples | None:
            samples = scrape(client, api)
            done = samples.value("notary_api_write_queue_depth") == 0
            anchored = samples.value("notary_api_stage_seconds_count", stage="anchor") >= 21
            return samples if done and anchored else None

        after = wait_until(drained, 60.0, 0.2, what="the writes to reach ledger and anchor")
        assert after.value("notary_api_stage_seconds_count", stage="ledger") >= 21
        assert after.value("notary_api_stage_seconds_sum", stage="ledger") > 0
        node_samples = scrape(client, node)
        assert node_samples.value("notary_node_block_height") > start_height
        assert (
            node_samples.value("notary_node_requests_total", method="reveal-entry", outcome="ok")
            >= 20
        )
        assert node_samples.value("notary_node_entries_accepted_total") >= 21
        wallet_samples = scrape(client, wallet)
        assert wallet_samples.total("notary_wallet_requests_total", outcome="ok") > 0
        anchor_samples = scrape(client, anchor)
        assert anchor_samples.value("notary_anchor_anchored_height") > 0
        assert anchor_samples.value("notary_anchor_pow_height") > 0
        assert anchor_samples.value("notary_anchor_node_height") >= anchor_samples.value(
            "notary_anchor_anchored_height"
        )


def test_the_services_behind_the_node_are_not_ready_while_it_is_down(tmp_path: Path) -> None:
    stack = Stack(stack_settings(tmp_path / "data"))
    stack.prepare()
    s = stack.settings
    node = AppServer(create_node_app(stack.node_settings()), s.node_port, name="node")
    others = [
        AppServer(create_wallet_app(stack.wallet_settings()), s.wallet_port, name="wallet"),
        AppServer(create_api_app(stack.api_settings()), s.api_port, name="api"),
        AppServer(create_anchor_app(stack.anchor_settings()), s.anchor_port, name="anchor"),
    ]
    node.start()
    try:
        for server in others:
            server.start()
        with httpx.Client(timeout=10.0) as client:
            for server in (node, *others):
                wait_until(lambda u=server.url: readiness(client, u)[0] == 200, 30.0)
            node.stop()
            for server in others:
                status, checks = readiness(client, server.url)
                assert status == 503, (server.url, checks)
                assert not checks["node"]["ok"] and checks["database"]["ok"]
                assert client.get(f"{server.url}/health/live").status_code == 200
            _, api_checks = readiness(client, others[1].url)
            assert not api_checks["entry_credits"]["ok"]  # the balance cannot be asked
            assert api_checks["wallet"]["ok"]
    finally:
        for server in reversed(others):
            server.stop()
        node.stop()


@pytest.mark.parametrize("in_process", [True, False])
def test_the_api_worker_calls_wallet_and_node_in_process(tmp_path: Path, in_process: bool) -> None:
    """In process (the default), the worker's compose batches never reach the wallet's HTTP
    route, yet the wallet composes every entry; over JSON-RPC they do."""
    with running_stack(tmp_path / "data", in_process_rpc=in_process) as stack:
        s = stack.settings
        api, wallet = s.url(s.api_port, ""), s.url(s.wallet_port, "")
        key = stack.api_key_file.read_text().strip()
        with httpx.Client(timeout=10.0) as client:

            def wallet_posts() -> float:
                samples = scrape(client, wallet)
                return samples.total("notary_wallet_http_requests_total", method="POST")

            before = wallet_posts()
            write_entries(client, api, key, b"in-process", 5)

            def ledgered() -> bool:
                samples = scrape(client, api)
                return samples.value("notary_api_stage_seconds_count", stage="ledger") >= 6

            wait_until(ledgered, 60.0, 0.2, what="the writes to reach the ledger")
            composed = scrape(client, wallet).total(
                "notary_wallet_requests_total", method="compose-entry", outcome="ok"
            )
            assert composed >= 5
            assert (wallet_posts() > before) is not in_process
