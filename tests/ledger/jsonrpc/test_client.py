"""JsonRpcClient / AsyncJsonRpcClient: results, error mapping, batches, transport failures."""

from __future__ import annotations

import httpx
import orjson
import pytest
from pydantic import BaseModel, Field
from starlette.applications import Starlette

from ledger.jsonrpc import (
    AsyncJsonRpcClient,
    JsonRpcCallError,
    JsonRpcClient,
    JsonRpcError,
    JsonRpcProtocolError,
    JsonRpcTransportError,
)
from ledger.jsonrpc.server import create_jsonrpc_app
from tests.harness.ports import free_port

from .conftest import REPEATED_HASH, Demo

pytestmark = pytest.mark.anyio


def _client(app: Starlette) -> AsyncJsonRpcClient:
    return AsyncJsonRpcClient("http://node/v2", transport=httpx.ASGITransport(app=app))


def _mock(handler: object) -> JsonRpcClient:
    return JsonRpcClient("http://node/v2", transport=httpx.MockTransport(handler))  # type: ignore[arg-type]


async def test_async_call_returns_the_result(app: Starlette) -> None:
    async with _client(app) as client:
        assert (await client.call("echo", {"text": "a", "count": 2}))["text"] == "aa"
        assert (await client.call("properties"))["nodeversion"] == "0.1.0"


async def test_async_call_maps_error_objects(app: Starlette) -> None:
    async with _client(app) as client:
        with pytest.raises(JsonRpcCallError) as not_found:
            await client.call("raise", {"kind": "not-found"})
        with pytest.raises(JsonRpcCallError) as repeated:
            await client.call("raise", {"kind": "repeated-commit"})
        with pytest.raises(JsonRpcCallError) as invalid:
            await client.call("entry", {"hash": "zz"})
        with pytest.raises(JsonRpcCallError) as missing:
            await client.call("no-such-method")
    error = not_found.value
    assert isinstance(error, JsonRpcError)
    assert (error.code, error.message, error.data, error.method) == (
        -32008,
        "Entry not found",
        None,
        "raise",
    )
    assert repeated.value.code == -32011
    assert repeated.value.data["entryhash"] == REPEATED_HASH.hex()
    assert (invalid.value.code, invalid.value.data) == (-32602, "hash: Invalid Hash")
    assert missing.value.code == -32601


async def test_async_client_accepts_errors_with_http_200(demo: Demo) -> None:
    app = create_jsonrpc_app(demo.registry, error_http_status=200)
    async with _client(app) as client:
        with pytest.raises(JsonRpcCallError) as locked:
            await client.call("raise", {"kind": "locked"})
    assert (locked.value.code, locked.value.message) == (-32001, "Wallet is locked")


async def test_async_batch_keeps_call_order_with_errors_in_place(
    app: Starlette, demo: Demo
) -> None:
    async with _client(app) as client:
        results = await client.batch(
            [
                ("record", {"text": "first"}),
                ("raise", {"kind": "receipt"}),
                ("properties", None),
                ("record", {"text": "last"}),
            ]
        )
        assert await client.batch([]) == []
    assert results[0] == "first"
    assert isinstance(results[1], JsonRpcCallError) and results[1].code == -32010
    assert results[1].method == "raise"
    assert results[2]["nodeapiversion"] == "2.0"
    assert results[3] == "last"
    assert demo.recorded == ["first", "last"]


async def test_batch_refused_whole_raises_the_error(demo: Demo) -> None:
    app = create_jsonrpc_app(demo.registry, max_body_bytes=200)
    async with _client(app) as client:
        with pytest.raises(JsonRpcCallError) as too_large:
            await client.batch([("echo", {"text": "x" * 300}), ("properties", None)])
    assert too_large.value.code == -32600


def test_sync_batch_matches_responses_by_id_not_position() -> None:
    def reversed_server(request: httpx.Request) -> httpx.Response:
        calls = orjson.loads(request.content)
        replies = [{"jsonrpc": "2.0", "id": c["id"], "result": c["method"]} for c in calls]
        replies[1] = {"jsonrpc": "2.0", "id": calls[1]["id"], "error": {"code": -1, "message": "m"}}
        return httpx.Response(200, content=orjson.dumps(replies[::-1]))

    with _mock(reversed_server) as client:
        results = client.batch([("a", None), ("b", {"x": 1}), ("c", None), ("d", None)])
    assert results[0] == "a" and results[2:] == ["c", "d"]
    assert isinstance(results[1], JsonRpcCallError) and results[1].method == "b"


def test_request_shape_ids_increase_and_params_are_omitted_when_none() -> None:
    seen: list[dict[str, object]] = []

    class Params(BaseModel):
        tx_name: str = Field(alias="tx-name")

    def server(request: httpx.Request) -> httpx.Response:
        body = orjson.loads(request.content)
        seen.append(body)
        assert request.headers["content-type"] == "application/json"
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": None})

    with _mock(server) as client:
        client.call("heights")
        client.call("add-fee", Params(**{"tx-name": "t"}))
        client.call("entry", {"hash": "00"})
    assert seen == [
        {"jsonrpc": "2.0", "id": 1, "method": "heights"},
        {"jsonrpc": "2.0", "id": 2, "method": "add-fee", "params": {"tx-name": "t"}},
        {"jsonrpc": "2.0", "id": 3, "method": "entry", "params": {"hash": "00"}},
    ]


@pytest.mark.parametrize(
    ("status", "content", "problem"),
    [
        (502, b"<html>Bad gateway</html>", "not JSON"),
        (200, b"", "not JSON"),
        (200, b'{"jsonrpc": "2.0", "id": 99, "result": 1}', "does not match"),
        (200, b'{"jsonrpc": "2.0", "id": 1}', "neither result nor error"),
        (200, b'{"jsonrpc": "2.0", "id": 1, "error": "boom"}', "malformed error"),
        (200, b"[1]", "not an object"),
    ],
)
def test_invalid_replies_are_protocol_errors(status: int, content: bytes, problem: str) -> None:
    client = _mock(lambda _: httpx.Response(status, content=content))
    with client, pytest.raises(JsonRpcProtocolError, match=problem) as caught:
        client.call("heights")
    assert caught.value.status_code == status
    assert isinstance(caught.value, JsonRpcTransportError)


def test_batch_with_missing_response_is_a_protocol_error() -> None:
    def server(request: httpx.Request) -> httpx.Response:
        first = orjson.loads(request.content)[0]
        return httpx.Response(200, json=[{"jsonrpc": "2.0", "id": first["id"], "result": 1}])

    with _mock(server) as client, pytest.raises(JsonRpcProtocolError, match="no response"):
        client.batch([("a", None), ("b", None)])


def test_sync_transport_error_chains_the_cause() -> None:
    url = f"http://user:pw@127.0.0.1:{free_port()}/v2"
    client = JsonRpcClient(url, timeout_s=2.0)
    with client, pytest.raises(JsonRpcTransportError) as caught:
        client.call("heights")
    assert isinstance(caught.value.__cause__, httpx.ConnectError)
    assert not isinstance(caught.value, JsonRpcProtocolError)
    assert "pw" not in str(caught.value) and "pw" not in caught.value.url


async def test_async_transport_error_chains_the_cause() -> None:
    async with AsyncJsonRpcClient(f"http://127.0.0.1:{free_port()}/v2", timeout_s=2.0) as client:
        with pytest.raises(JsonRpcTransportError) as caught:
            await client.batch([("heights", None)])
    assert isinstance(caught.value.__cause__, httpx.ConnectError)


def test_timeout_is_a_transport_error() -> None:
    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    with _mock(slow) as client, pytest.raises(JsonRpcTransportError) as caught:
        client.call("heights")
    assert isinstance(caught.value.__cause__, httpx.ReadTimeout)
