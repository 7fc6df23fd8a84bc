"""The HTTP endpoint through httpx.ASGITransport: envelopes, batches, errors, limits."""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from ledger.jsonrpc.server import create_jsonrpc_app

from .conftest import REPEATED_HASH, Demo, post, request

pytestmark = pytest.mark.anyio


async def test_success_returns_result_with_echoed_id(http: httpx.AsyncClient) -> None:
    response = await post(http, request("echo", {"text": "ab", "count": 2}, request_id=7))
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] == 7 and "error" not in body
    assert body["result"]["text"] == "abab"


@pytest.mark.parametrize("request_id", [0, 12345678901, "abc-1", "", None])
async def test_id_types_are_echoed(http: httpx.AsyncClient, request_id: object) -> None:
    body = (await post(http, request("properties", request_id=request_id))).json()
    assert body == {
        "jsonrpc": "2.0",
        "id": request_id,
        "result": {"nodeversion": "0.1.0", "nodeapiversion": "2.0"},
    }


async def test_alias_reaches_the_same_handler(http: httpx.AsyncClient) -> None:
    body = (await post(http, request("say", {"text": "hi"}))).json()
    assert body["result"]["text"] == "hi"


@pytest.mark.parametrize("params", [None, {}, [], {"ignored": 1}])
async def test_no_params_method_accepts_absent_or_empty_params(
    http: httpx.AsyncClient, params: object
) -> None:
    payload = request("properties")
    if params is not None:
        payload["params"] = params
    assert (await post(http, payload)).json()["result"]["nodeversion"] == "0.1.0"


async def test_extra_param_fields_are_ignored(http: httpx.AsyncClient) -> None:
    body = (await post(http, request("echo", {"text": "x", "unknown": True}))).json()
    assert body["result"]["text"] == "x"


async def test_sync_handlers_run_off_the_loop_async_and_nonblocking_on_it(
    http: httpx.AsyncClient,
) -> None:
    loop_thread = threading.get_ident()
    threads = {}
    for method in ("echo", "async-echo", "loop-echo"):
        body = (await post(http, request(method, {"text": "t"}))).json()
        threads[method] = body["result"]["thread"]
    assert threads["echo"] != loop_thread
    assert threads["async-echo"] == loop_thread
    assert threads["loop-echo"] == loop_thread


async def test_pydantic_results_are_dumped_by_alias(http: httpx.AsyncClient) -> None:
    top = (await post(http, request("model"))).json()["result"]
    nested = (await post(http, request("nested-model"))).json()["result"]
    assert top == {"entryhash": "ab" * 32, "chainid": "cd" * 32}
    assert nested == {"items": [{"entryhash": "ef" * 32, "chainid": "01" * 32}]}


@pytest.mark.parametrize("content_type", ["text/plain", "text/plain;", "application/json", None])
async def test_content_types(http: httpx.AsyncClient, content_type: str | None) -> None:
    headers = {} if content_type is None else {"content-type": content_type}
    response = await post(http, request("echo", {"text": "ct"}), headers=headers)
    assert response.status_code == 200
    assert response.json()["result"]["text"] == "ct"


async def test_get_with_body_is_accepted(http: httpx.AsyncClient) -> None:
    body = orjson.dumps(request("echo", {"text": "get"}))
    response = await http.request("GET", "/v2", content=body)
    assert response.status_code == 200
    assert response.json()["result"]["text"] == "get"


async def test_other_http_methods_and_paths_are_refused(http: httpx.AsyncClient) -> None:
    assert (await http.put("/v2", content=b"{}")).status_code == 405
    assert (await http.post("/v1", content=b"{}")).status_code == 404


# --- errors ---------------------------------------------------------------------------------


def _error(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert body["jsonrpc"] == "2.0" and "result" not in body
    return body


@pytest.mark.parametrize(
    "raw",
    [b"{", b"", b"not json", b'{"jsonrpc": "2.0", "method": "echo",}', b'{"a": NaN}'],
)
async def test_invalid_json_is_a_parse_error_with_null_id(
    http: httpx.AsyncClient, raw: bytes
) -> None:
    response = await http.post("/v2", content=raw)
    assert response.status_code == 400
    body = _error(response)
    assert body["id"] is None
    assert body["error"] == {"code": -32700, "message": "Parse error"}


async def test_invalid_utf8_is_a_parse_error(http: httpx.AsyncClient) -> None:
    raw = b'{"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {"text": "\xff\xfe"}}'
    body = _error(await http.post("/v2", content=raw))
    assert body["id"] is None and body["error"]["code"] == -32700


async def test_utf8_bom_is_tolerated(http: httpx.AsyncClient) -> None:
    raw = b"\xef\xbb\xbf" + orjson.dumps(request("echo", {"text": "bom"}))
    assert (await http.post("/v2", content=raw)).json()["result"]["text"] == "bom"


async def test_json_nested_100000_deep_does_not_crash(demo: Demo) -> None:
    app = create_jsonrpc_app(demo.registry)  # default 1 MiB limit: the body is ~200 kB
    deep = b"[" * 100_000 + b"]" * 100_000
    envelope = b'{"jsonrpc": "2.0", "id": 3, "method": "echo", "params": {"text": %s}}' % deep
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://n") as c:
        for raw in (deep, envelope):
            response = await c.post("/v2", content=raw)
            assert response.status_code == 400
            assert _error(response)["error"]["code"] == -32700
        # the server still answers afterwards
        assert (await post(c, request("echo", {"text": "ok"}))).json()["result"]["text"] == "ok"


async def test_nested_params_within_parser_limit_are_invalid_params(
    http: httpx.AsyncClient,
) -> None:
    raw = b'{"jsonrpc":"2.0","id":1,"method":"echo","params":{"text":%s}}' % (
        b"[" * 500 + b"]" * 500
    )
    body = _error(await http.post("/v2", content=raw))
    assert body["error"]["code"] == -32602
    assert body["error"]["data"].startswith("text: ")


@pytest.mark.parametrize(
    ("payload", "echoed_id"),
    [
        (1, None),
        ("request", None),
        ({"id": 1, "method": "echo"}, 1),  # no jsonrpc member
        ({"jsonrpc": "1.0", "id": 2, "method": "echo"}, 2),
        ({"jsonrpc": 2.0, "id": 2, "method": "echo"}, 2),
        ({"jsonrpc": "2.0", "id": 4}, 4),  # no method
        ({"jsonrpc": "2.0", "id": 4, "method": 12}, 4),
        ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "echo"}, None),
        ({"jsonrpc": "2.0", "id": [1], "method": "echo"}, None),
        ({"jsonrpc": "2.0", "id": True, "method": "echo"}, None),
        ({"jsonrpc": "2.0", "id": 5, "method": "echo", "params": "text"}, 5),
        ({"jsonrpc": "2.0", "id": 5, "method": "echo", "params": 3}, 5),
        ({"jsonrpc": "2.0", "method": 5}, None),  # an invalid notification is still answered
    ],
)
async def test_invalid_request_objects(
    http: httpx.AsyncClient, payload: object, echoed_id: object
) -> None:
    response = await post(http, payload)
    assert response.status_code == 400
    body = _error(response)
    assert body["id"] == echoed_id
    assert body["error"]["code"] == -32600
    assert body["error"]["message"] == "Invalid Request"


async def test_method_not_found(http: httpx.AsyncClient) -> None:
    body = _error(await post(http, request("factoid-nothing", request_id=9)))
    assert body == {
        "jsonrpc": "2.0",
        "id": 9,
        "error": {"code": -32601, "message": "Method not found"},
    }


@pytest.mark.parametrize(
    ("method", "params", "data"),
    [
        ("echo", {}, "text: Field required"),
        ("echo", None, "text: Field required"),
        ("echo", {"text": "a", "count": "many"}, "count: Input should be a valid integer"),
        ("entry", {"hash": "abc"}, "hash: Invalid Hash"),
        ("add-input", {"tx_name": "t", "amount": 1}, "tx-name: Field required"),
        ("echo", ["positional"], "params must be an object of named fields, not an array"),
    ],
)
async def test_invalid_params_name_the_field(
    http: httpx.AsyncClient, method: str, params: object, data: str
) -> None:
    body = _error(await post(http, request(method, params)))
    assert body["id"] == 1
    assert body["error"]["code"] == -32602
    assert body["error"]["message"] == "Invalid params"
    assert body["error"]["data"].startswith(data)


async def test_validation_message_lists_every_field(http: httpx.AsyncClient) -> None:
    body = _error(await post(http, request("add-input", {"amount": "x"})))
    assert body["error"]["data"] == (
        "tx-name: Field required; amount: Input should be a valid integer, "
        "unable to parse string as an integer"
    )


@pytest.mark.parametrize(
    ("kind", "error"),
    [
        ("not-found", {"code": -32008, "message": "Entry not found"}),
        ("missing-chain-head", {"code": -32009, "message": "Missing Chain Head"}),
        ("receipt", {"code": -32010, "message": "Receipt creation error"}),
        (
            "repeated-commit",
            {
                "code": -32011,
                "message": "Repeated Commit",
                "data": {
                    "info": "A commit with equal or greater payment already exists",
                    "entryhash": REPEATED_HASH.hex(),
                },
            },
        ),
        ("locked", {"code": -32001, "message": "Wallet is locked"}),
        ("passphrase", {"code": -32003, "message": "Incorrect passphrase"}),
        ("invalid-params", {"code": -32602, "message": "Invalid params", "data": "Invalid Hash"}),
        ("internal", {"code": -32603, "message": "Internal error", "data": "database error"}),
    ],
)
async def test_handler_errors_are_rendered(
    http: httpx.AsyncClient, kind: str, error: dict[str, object]
) -> None:
    response = await post(http, request("raise", {"kind": kind}, request_id="r"))
    assert response.status_code == 400
    assert response.json() == {"jsonrpc": "2.0", "id": "r", "error": error}


async def test_unexpected_exception_is_a_generic_internal_error(
    http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="ledger.jsonrpc"):
        response = await post(http, request("raise", {"kind": "crash"}))
    assert response.status_code == 400
    assert response.json()["error"] == {"code": -32603, "message": "Internal error"}
    assert b"secret-token" not in response.content and b"sqlite" not in response.content
    logged = [r.exc_info[1] for r in caplog.records if r.exc_info]
    assert logged and "secret-token-123" in str(logged[0])


async def test_unencodable_result_becomes_internal_error(http: httpx.AsyncClient) -> None:
    body = _error(await post(http, request("unencodable", request_id=6)))
    assert body["id"] == 6
    assert body["error"] == {"code": -32603, "message": "Internal error"}


async def test_error_http_status_is_configurable_for_the_wallet(demo: Demo) -> None:
    app = create_jsonrpc_app(demo.registry, error_http_status=200, path="/wallet")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://w") as c:
        response = await c.post("/wallet", content=orjson.dumps(request("nope")))
        parse = await c.post("/wallet", content=b"{")
    assert response.status_code == 200 and response.json()["error"]["code"] == -32601
    assert parse.status_code == 200 and parse.json()["error"]["code"] == -32700


# --- batches and notifications ------------------------------------------------------------


async def test_batch_mixes_success_error_and_notification_in_order(
    http: httpx.AsyncClient, demo: Demo
) -> None:
    batch = [
        request("echo", {"text": "one"}, request_id=1),
        request("record", {"text": "quiet"}, request_id=...),  # notification
        request("nope", request_id="two"),
        {"jsonrpc": "2.0", "id": 3},  # invalid
        request("raise", {"kind": "not-found"}, request_id=None),
        request("async-echo", {"text": "five"}, request_id=5),
        7,
    ]
    response = await post(http, batch)
    assert response.status_code == 200
    body = response.json()
    assert [item["id"] for item in body] == [1, "two", 3, None, 5, None]
    assert body[0]["result"]["text"] == "one"
    assert body[1]["error"]["code"] == -32601
    assert body[2]["error"]["code"] == -32600
    assert body[3]["error"] == {"code": -32008, "message": "Entry not found"}
    assert body[4]["result"]["text"] == "five"
    assert body[5]["error"]["code"] == -32600
    assert demo.recorded == ["quiet"]


async def test_batch_runs_in_request_order(http: httpx.AsyncClient, demo: Demo) -> None:
    batch = [request("record", {"text": str(i)}, request_id=i) for i in range(20)]
    body = (await post(http, batch)).json()
    assert [item["result"] for item in body] == [str(i) for i in range(20)]
    assert demo.recorded == [str(i) for i in range(20)]


async def test_empty_batch_is_one_invalid_request(http: httpx.AsyncClient) -> None:
    response = await post(http, [])
    assert response.status_code == 400
    body = response.json()
    assert isinstance(body, dict) and body["id"] is None and body["error"]["code"] == -32600


async def test_only_notifications_get_204_and_still_run(
    http: httpx.AsyncClient, demo: Demo
) -> None:
    single = await post(http, request("record", {"text": "a"}, request_id=...))
    batch = await post(
        http,
        [
            request("record", {"text": "b"}, request_id=...),
            request("nope", request_id=...),  # errors of notifications are not reported
            request("raise", {"kind": "crash"}, request_id=...),
        ],
    )
    assert (single.status_code, single.content) == (204, b"")
    assert (batch.status_code, batch.content) == (204, b"")
    assert demo.recorded == ["a", "b"]


async def test_batch_with_unencodable_item_keeps_the_others(http: httpx.AsyncClient) -> None:
    batch = [request("unencodable", request_id=1), request("properties", request_id=2)]
    body = (await post(http, batch)).json()
    assert body[0]["error"]["code"] == -32603
    assert body[1]["result"]["nodeversion"] == "0.1.0"


# --- body size limit ----------------------------------------------------------------------


async def test_oversized_body_with_content_length_is_413(http: httpx.AsyncClient) -> None:
    payload = request("echo", {"text": "x" * 5000})
    response = await post(http, payload)
    assert response.status_code == 413
    body = response.json()
    assert body["id"] is None
    assert body["error"]["code"] == -32600
    assert "4096" in body["error"]["data"]


async def test_body_exactly_at_limit_is_accepted(http: httpx.AsyncClient) -> None:
    payload = request("echo", {"text": ""})
    padding = 4096 - len(orjson.dumps(payload))
    payload["params"]["text"] = "y" * padding
    raw = orjson.dumps(payload)
    assert len(raw) == 4096
    assert (await http.post("/v2", content=raw)).status_code == 200


async def test_oversized_streamed_body_is_not_read_to_the_end(http: httpx.AsyncClient) -> None:
    sent = 0

    async def chunks() -> AsyncIterator[bytes]:
        nonlocal sent
        for _ in range(1000):
            sent += 1
            yield b" " * 1024

    response = await http.post("/v2", content=chunks())  # chunked: no content-length
    assert response.status_code == 413
    assert response.json()["error"]["code"] == -32600
    assert sent < 10
