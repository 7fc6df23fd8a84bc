"""Readiness checks: concurrent, bounded, and never echoing an exception's message."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import httpx
import pytest

from ledger.jsonrpc.client import AsyncJsonRpcClient
from ledger.observability import (
    Check,
    CheckResult,
    Observability,
    ObservabilityMiddleware,
    Readiness,
    jsonrpc_check,
    not_found_app,
    sqlite_file_check,
)
from tests.harness.ports import free_port

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def fixed(result: CheckResult):  # type: ignore[no-untyped-def]
    async def probe() -> CheckResult:
        return result

    return probe


async def test_ready_only_when_every_check_holds() -> None:
    readiness = Readiness("svc", [Check("a", fixed(CheckResult(True, "fine", {"n": 3})))])
    report = await readiness.report()
    assert report.ready and report.status_code == 200
    assert report.to_json() == {
        "status": "ready",
        "service": "svc",
        "checks": [{"name": "a", "ok": True, "detail": "fine", "n": 3}],
    }
    readiness.add(Check("b", fixed(CheckResult(False, "down"))))
    report = await readiness.report()
    assert not report.ready and report.status_code == 503
    assert [c["name"] for c in report.to_json()["checks"]] == ["a", "b"]
    with pytest.raises(ValueError):
        readiness.add(Check("a", fixed(CheckResult(True, ""))))


async def test_a_raising_check_fails_without_its_message() -> None:
    async def leaky() -> CheckResult:
        raise RuntimeError("postgresql://user:hunter2@db/notary refused")

    report = await Readiness("svc", [Check("db", leaky)]).report()
    ((_, result),) = report.results
    assert not result.ok
    assert result.detail == "check failed: RuntimeError"
    assert "hunter2" not in str(report.to_json())


async def test_checks_run_at_once_and_a_slow_one_is_cut() -> None:
    async def slow() -> CheckResult:
        await asyncio.sleep(5)
        return CheckResult(True, "late")

    async def quick() -> CheckResult:
        await asyncio.sleep(0.2)
        return CheckResult(True, "ok")

    readiness = Readiness(
        "svc", [Check("slow", slow), Check("q1", quick), Check("q2", quick)], timeout_s=0.5
    )
    started = time.monotonic()
    report = await readiness.report()
    assert time.monotonic() - started < 1.5  # not 5 s, not 0.2 + 0.2 + 0.5 in a row
    results = dict(report.results)
    assert not results["slow"].ok and "0.5 s" in results["slow"].detail
    assert results["q1"].ok and results["q2"].ok


async def test_sqlite_file_check(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    probe = sqlite_file_check(path)
    assert not (await probe()).ok  # missing
    sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.close()
    assert (await probe()).ok
    path.write_bytes(b"not a database" * 100)
    result = await probe()
    assert not result.ok and "not readable" in result.detail


async def test_jsonrpc_check_tells_a_dead_service_from_a_live_one() -> None:
    async with AsyncJsonRpcClient(f"http://127.0.0.1:{free_port()}/v2", timeout_s=1) as dead:
        result = await jsonrpc_check(dead, "heights", what="node")()
    assert not result.ok and result.detail == "node unreachable"

    async def rpc(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": 1, "result": {"h": 7}})

    transport = httpx.MockTransport(rpc)
    async with AsyncJsonRpcClient("http://node/v2", transport=transport) as live:
        result = await jsonrpc_check(live, "heights", what="node", figures=lambda r: r)()
    assert result.ok and result.figures == {"h": 7}


async def test_middleware_answers_the_probes_and_counts_the_rest() -> None:
    obs = Observability.create("svc", requests_prefix="svc_http")
    obs.readiness.add(Check("dep", fixed(CheckResult(False, "dependency down"))))
    obs.live = lambda: {"height": 4}
    app = ObservabilityMiddleware(not_found_app, observability=obs)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://svc") as client:
        live = await client.get("/health/live")
        assert live.json() == {"status": "ok", "service": "svc", "height": 4}
        ready = await client.get("/health/ready")
        assert ready.status_code == 503
        assert ready.json()["checks"][0]["detail"] == "dependency down"
        assert (await client.get("/anything/else")).status_code == 404
        metrics = (await client.get("/metrics")).text
    assert 'svc_http_requests_total{method="GET",route="other",status="404"} 1.0' in metrics
    assert "/health" not in metrics  # the probes themselves are not counted
