"""The app on a real uvicorn server on a free 127.0.0.1 port, driven by the sync client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from ledger.jsonrpc import JsonRpcCallError, JsonRpcClient
from ledger.jsonrpc.server import create_jsonrpc_app
from tests.harness.servers import AppServer

from .conftest import build_demo, request


@pytest.mark.e2e
def test_real_server_round_trip() -> None:
    demo = build_demo()
    events: list[str] = []

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        events.append("start")
        yield
        events.append("stop")

    async def health(_: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    app = create_jsonrpc_app(
        demo.registry, lifespan=lifespan, extra_routes=[Route("/health", health)]
    )
    with AppServer(app) as server:
        base_url = server.url
        assert events == ["start"]
        with JsonRpcClient(f"{base_url}/v2", timeout_s=5.0) as client:
            for i in range(20):  # keep-alive connection reused
                assert client.call("echo", {"text": str(i)})["text"] == str(i)
            results = client.batch([("properties", None), ("nope", None), ("say", {"text": "z"})])
            with pytest.raises(JsonRpcCallError) as caught:
                client.call("raise", {"kind": "passphrase"})
        assert results[0]["nodeversion"] == "0.1.0"
        assert isinstance(results[1], JsonRpcCallError) and results[1].code == -32601
        assert results[2]["text"] == "z"
        assert caught.value.code == -32003

        raw = orjson.dumps(request("echo", {"text": "get"}))
        get = httpx.request(
            "GET", f"{base_url}/v2", content=raw, headers={"content-type": "text/plain"}
        )
        error = httpx.post(f"{base_url}/v2", content=b"{")
        too_big = httpx.post(f"{base_url}/v2", content=b" " * 2_000_000)
        assert httpx.get(f"{base_url}/health").text == "ok"
    assert events == ["start", "stop"]
    assert get.status_code == 200 and get.json()["result"]["text"] == "get"
    assert error.status_code == 400 and error.json()["error"]["code"] == -32700
    assert too_big.status_code == 413 and too_big.json()["error"]["code"] == -32600
