"""The metrics and readiness server of ``notary watch`` / ``notary collect --listen``
(flows/observability.py), against a stand-in API and node."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from connectors.audit import AuditStore, DocumentIn, NewNotarization
from connectors.served_app import ServerStartError
from flows.observability import pipeline_metrics
from flows.settings import PipelineSettings
from ledger.core.clock import ManualClock
from tests.harness.metrics import Samples
from tests.harness.ports import free_port
from tests.harness.servers import AppServer

KEY = "pipeline-test-key"


def stand_in() -> Starlette:
    """Operation 1 of the API (with the key) and the node's ``heights``."""

    async def info(request: Request) -> JSONResponse:
        if request.headers.get("user-key") != KEY:
            return JSONResponse({"error": {"code": 403}}, status_code=403)
        return JSONResponse({"api_version": "1.0.11", "links": {}})

    async def rpc(request: Request) -> JSONResponse:
        body = await request.json()
        return JSONResponse({"jsonrpc": "2.0", "id": body["id"], "result": {"h": 1}})

    return Starlette(
        routes=[Route("/v1/", info), Route("/v1", info), Route("/v2", rpc, methods=["POST"])]
    )


@pytest.fixture
def services() -> Iterator[AppServer]:
    with AppServer(stand_in(), name="stand-in") as server:
        yield server


def settings_for(tmp_path: Path, services: AppServer, **extra: Any) -> PipelineSettings:
    return PipelineSettings(
        data_dir=tmp_path,
        audit_db_url=f"sqlite:///{tmp_path / 'audit.sqlite'}",
        api_url=f"{services.url}/v1",
        api_key=KEY,
        node_url=f"{services.url}/v2",
        metrics_port=free_port(),
        **extra,
    )


def add_waiting(tmp_path: Path, *, age_s: float, count: int) -> None:
    clock = ManualClock(time.time() - age_s)
    with AuditStore(f"sqlite:///{tmp_path / 'audit.sqlite'}", clock=clock) as store:
        labels = [f"doc-{i}" for i in range(count)]
        docs = [DocumentIn(x, hashlib.sha256(x.encode()).hexdigest(), 1) for x in labels]
        ids = store.notarizations.upsert_documents("folder:/drop", docs)
        store.notarizations.add(
            [
                NewNotarization(d, "c", "ab" * 32, doc.sha256)
                for d, doc in zip(ids, docs, strict=True)
            ]
        )


def get(settings: PipelineSettings, path: str) -> httpx.Response:
    return httpx.get(f"http://127.0.0.1:{settings.metrics_port}{path}", timeout=10.0)


def test_collector_reports_the_oldest_unanchored_document(
    tmp_path: Path, services: AppServer
) -> None:
    add_waiting(tmp_path, age_s=120.0, count=2)
    settings = settings_for(tmp_path, services, ready_max_unanchored_age_s=60.0)
    with pipeline_metrics(settings, role="collect") as metrics:
        ready = get(settings, "/health/ready")
        assert ready.status_code == 503
        checks = {c["name"]: c for c in ready.json()["checks"]}
        assert checks["audit_store"]["ok"] and checks["api"]["ok"] and checks["node"]["ok"]
        unanchored = checks["unanchored"]
        assert not unanchored["ok"] and unanchored["waiting"] == 2
        assert unanchored["oldest_unanchored_age_s"] >= 120.0
        assert get(settings, "/health/live").status_code == 200

        metrics.record_sweep({"ledger_recorded": 2, "anchored": 1, "receipts_rejected": 0}, True)
        samples = Samples.parse(get(settings, "/metrics").text)
        assert samples.value("notary_pipeline_oldest_unanchored_seconds") >= 120.0
        assert samples.value("notary_pipeline_documents_waiting", stage="pending") == 2
        assert samples.value("notary_pipeline_documents_total", stage="ledger") == 2
        assert samples.value("notary_pipeline_documents_total", stage="anchor") == 1
        assert samples.value("notary_pipeline_sweeps_total", cause="callback") == 1
        assert samples.value("notary_pipeline_last_run_timestamp_seconds") > 0
    with pytest.raises(httpx.ConnectError):  # the server ends with the block
        get(settings, "/health/live")


def test_watch_is_ready_with_its_store_and_api_and_not_without_the_api(
    tmp_path: Path, services: AppServer
) -> None:
    settings = settings_for(tmp_path, services)
    AuditStore(settings.audit_url).close()  # the command creates its store first
    with pipeline_metrics(settings, role="watch") as metrics:
        ready = get(settings, "/health/ready")
        assert ready.status_code == 200, ready.text
        assert {c["name"] for c in ready.json()["checks"]} == {"audit_store", "api"}
        metrics.record_batch(
            {
                "documents_seen": 5,
                "published": 3,
                "skipped_known": 1,
                "publish_failed": 1,
                "hash_errors": 0,
            }
        )
        samples = Samples.parse(get(settings, "/metrics").text)
        assert samples.value("notary_pipeline_documents_total", stage="published") == 3
        assert samples.value("notary_pipeline_documents_total", stage="failed") == 1
        assert samples.value("notary_pipeline_documents_seen_total") == 5
        assert samples.value("notary_pipeline_documents_known_total") == 1
        assert samples.value("notary_pipeline_batches_total") == 1
        services.stop()
        checks = {c["name"]: c for c in get(settings, "/health/ready").json()["checks"]}
        assert not checks["api"]["ok"] and checks["audit_store"]["ok"]


def test_no_server_without_a_port_and_a_clear_error_when_it_is_taken(
    tmp_path: Path, services: AppServer
) -> None:
    quiet = settings_for(tmp_path, services).model_copy(update={"metrics_port": None})
    with pipeline_metrics(quiet, role="watch") as metrics:
        metrics.record_batch(
            {
                "documents_seen": 1,
                "published": 1,
                "skipped_known": 0,
                "publish_failed": 0,
                "hash_errors": 0,
            }
        )
    taken = settings_for(tmp_path, services).model_copy(update={"metrics_port": services.port})
    with (
        pytest.raises(ServerStartError, match="metrics server"),
        pipeline_metrics(taken, role="watch"),
    ):
        pass


def test_the_command_line_refuses_an_unknown_log_format() -> None:
    from typer.testing import CliRunner

    from flows.cli.application import app

    result = CliRunner().invoke(app, ["--log-format", "xml", "verify", "a", "--proof", "b"])
    assert result.exit_code == 2
    assert "unknown log format 'xml'" in result.output
