"""Tests of connectors.node.NodeClient against a fake node behind httpx.MockTransport."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import httpx
import pytest

from connectors.errors import (
    AuthError,
    InvalidResponse,
    RequestRejected,
    RpcError,
    ServiceUnavailable,
)
from connectors.node import NOT_FOUND_CODES, NodeClient

URL = "http://node.test/v2"


def h(label: str) -> str:
    return hashlib.sha256(label.encode()).hexdigest()


def receipt_for(entry_hash: str) -> dict[str, Any]:
    """A receipt result in the shape of docs/formats.md §6."""
    return {
        "receipt": {
            "entry": {"entryhash": entry_hash, "timestamp": 1_700_000_060},
            "merklebranch": [{"left": entry_hash, "right": h("r"), "top": h("t")}],
            "entryblockkeymr": h("eb"),
            "directoryblockkeymr": h("db"),
            "directoryblockheight": 12,
        }
    }


class FakeNode:
    """Answers like factomd: errors with HTTP 400 (or 200), batches optional."""

    def __init__(self, *, batches: bool = True, error_status: int = 400) -> None:
        self.batches = batches
        self.error_status = error_status
        self.bodies: list[Any] = []
        self.in_blocks = {h("e1"), h("e2")}
        self.pending = {h("e3")}

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        if isinstance(body, list):
            if not self.batches:
                error = {"code": -32600, "message": "Invalid Request"}
                return httpx.Response(400, json={"jsonrpc": "2.0", "id": None, "error": error})
            answers = [self.answer(call) for call in reversed(body)]  # order must not matter
            return httpx.Response(200, json=answers)
        answer = self.answer(body)
        return httpx.Response(self.error_status if "error" in answer else 200, json=answer)

    def answer(self, call: dict[str, Any]) -> dict[str, Any]:
        assert call["jsonrpc"] == "2.0" and isinstance(call["id"], int)
        try:
            result = self.dispatch(call["method"], call.get("params", {}))
        except RpcError as exc:
            error = {"code": exc.code, "message": exc.message}
            if exc.data is not None:
                error["data"] = exc.data
            return {"jsonrpc": "2.0", "id": call["id"], "error": error}
        return {"jsonrpc": "2.0", "id": call["id"], "result": result}

    def dispatch(self, method: str, params: dict[str, Any]) -> Any:
        if method == "receipt":
            if params["hash"] in self.in_blocks:
                return receipt_for(params["hash"])
            if params["hash"] in self.pending:
                raise RpcError(-32010, "Receipt creation error")
            raise RpcError(-32008, "Entry not found")
        if method == "heights":
            return dict.fromkeys(
                ["directoryblockheight", "leaderheight", "entryblockheight", "entryheight"], 12
            )
        if method == "dblock-by-height":
            if params["height"] > 12:
                raise RpcError(-32008, "Block not found")
            return {"dblock": {"header": {"dbheight": params["height"]}}, "rawdata": "00"}
        if method == "directory-block":
            return {"header": {"sequencenumber": 12}, "entryblocklist": [], "_k": params["keymr"]}
        if method == "properties":
            return {"nodeversion": "0.1.0", "nodeapiversion": "2.0"}
        if method == "anchors":
            if params.get("height") == 99:
                raise RpcError(-32008, "Object not found")
            return {"directoryblockheight": params.get("height", 1), "anchor_pow": {}}
        if method == "commit-entry":
            raise RpcError(-32011, "Repeated Commit", data={"info": "x", "entryhash": h("e1")})
        if method == "explode":
            raise RpcError(-32603, "Internal error", data="database error")
        raise RpcError(-32601, "Method not found")


@pytest.fixture
def node() -> FakeNode:
    return FakeNode()


@pytest.fixture
def client(node: FakeNode):
    with NodeClient(URL, transport=httpx.MockTransport(node)) as rpc:
        yield rpc


def test_receipts_in_one_batch_with_none_for_missing(client: NodeClient, node: FakeNode) -> None:
    wanted = [h("e1"), h("e3"), h("unknown"), h("e2")]
    receipts = client.receipts(wanted)
    assert list(receipts) == wanted
    assert receipts[h("e1")] == receipt_for(h("e1"))["receipt"]
    assert receipts[h("e2")]["entry"]["entryhash"] == h("e2")
    assert receipts[h("e3")] is None and receipts[h("unknown")] is None
    (batch,) = node.bodies
    assert [c["method"] for c in batch] == ["receipt"] * 4
    assert [c["params"] for c in batch] == [{"hash": x} for x in wanted]
    assert len({c["id"] for c in batch}) == 4


def test_receipts_include_raw_entry_and_validate_hashes(client: NodeClient, node) -> None:
    client.receipts([h("e1")], include_raw_entry=True)
    assert node.bodies[-1]["params"] == {"hash": h("e1"), "includerawentry": True}
    with pytest.raises(ValueError, match="64-hex"):
        client.receipts(["nothex"])
    assert client.receipts([]) == {}


def test_batches_are_split_by_batch_size(node: FakeNode) -> None:
    with NodeClient(URL, batch_size=2, transport=httpx.MockTransport(node)) as rpc:
        result = rpc.receipts([h("e1"), h("e2"), h("e1"), h("e2"), h("e1")])
    assert all(v is not None for v in result.values())
    assert [len(b) if isinstance(b, list) else 1 for b in node.bodies] == [2, 2, 1]


def test_falls_back_to_single_calls_when_batches_are_rejected() -> None:
    node = FakeNode(batches=False)
    with NodeClient(URL, transport=httpx.MockTransport(node)) as rpc:
        first = rpc.receipts([h("e1"), h("e3")])
        second = rpc.receipts([h("e2"), h("e1")])
    assert first == {h("e1"): receipt_for(h("e1"))["receipt"], h("e3"): None}
    assert second[h("e2")] is not None
    kinds = ["batch" if isinstance(b, list) else "single" for b in node.bodies]
    assert kinds == ["batch", "single", "single", "single", "single"]  # batch tried once


def test_call_batch_returns_errors_in_place(client: NodeClient) -> None:
    results = client.call_batch([("properties", None), ("nope", {}), ("heights", None)])
    assert results[0]["nodeapiversion"] == "2.0"
    assert isinstance(results[1], RpcError) and results[1].code == -32601
    assert results[2]["leaderheight"] == 12


def test_receipts_raise_other_rpc_errors() -> None:
    def broken(request: httpx.Request) -> httpx.Response:
        calls = json.loads(request.content)
        error = {"code": -32603, "message": "Internal error"}
        return httpx.Response(
            200, json=[{"jsonrpc": "2.0", "id": c["id"], "error": error} for c in calls]
        )

    with (
        NodeClient(URL, transport=httpx.MockTransport(broken)) as rpc,
        pytest.raises(RpcError) as caught,
    ):
        rpc.receipts([h("e1"), h("e2")])
    assert caught.value.code == -32603 and caught.value.retryable


def test_typed_helpers(client: NodeClient, node: FakeNode) -> None:
    assert client.heights()["directoryblockheight"] == 12
    assert client.dblock_by_height(5) == {"dblock": {"header": {"dbheight": 5}}, "rawdata": "00"}
    assert client.directory_block(h("k"))["_k"] == h("k")
    assert client.properties() == {"nodeversion": "0.1.0", "nodeapiversion": "2.0"}
    assert client.anchors(height=3)["directoryblockheight"] == 3
    assert client.anchors(hash_hex=h("x")) is not None
    assert node.bodies[-1]["params"] == {"hash": h("x")}
    assert client.anchors(height=99) is None
    assert "params" not in node.bodies[0]  # no params for heights
    with pytest.raises(ValueError):
        client.anchors()


@pytest.mark.parametrize("error_status", [400, 200, 500])
def test_rpc_errors_keep_code_message_data(error_status: int) -> None:
    node = FakeNode(error_status=error_status)
    with NodeClient(URL, transport=httpx.MockTransport(node)) as rpc:
        with pytest.raises(RpcError) as missing:
            rpc.dblock_by_height(13)
        with pytest.raises(RpcError) as repeated:
            rpc.call("commit-entry", {"message": "00"})
        with pytest.raises(RpcError) as internal:
            rpc.call("explode")
    assert missing.value.code == -32008 and missing.value.code in NOT_FOUND_CODES
    assert missing.value.message == "Block not found" and missing.value.method == "dblock-by-height"
    assert not missing.value.retryable
    assert repeated.value.data == {"info": "x", "entryhash": h("e1")}
    assert not repeated.value.retryable
    assert internal.value.retryable and internal.value.data == "database error"


@pytest.mark.parametrize(
    ("response", "error"),
    [
        (httpx.Response(502, text="bad gateway"), ServiceUnavailable),
        (httpx.Response(401, text="auth"), AuthError),
        (httpx.Response(404, text="no route"), RequestRejected),
        (httpx.Response(200, text="<html>"), InvalidResponse),
        (httpx.Response(200, json={"jsonrpc": "2.0", "id": 1}), InvalidResponse),
        (httpx.Response(200, json={"jsonrpc": "2.0", "id": 1, "result": [1]}), InvalidResponse),
        (httpx.Response(200, json={"jsonrpc": "2.0", "id": 1, "error": "x"}), InvalidResponse),
    ],
)
def test_transport_level_failures(response: httpx.Response, error: type) -> None:
    with (
        NodeClient(URL, transport=httpx.MockTransport(lambda r: response)) as rpc,
        pytest.raises(error),
    ):
        rpc.heights()


def test_batch_answer_missing_an_id_is_invalid() -> None:
    def partial(request: httpx.Request) -> httpx.Response:
        first = json.loads(request.content)[0]
        return httpx.Response(200, json=[{"jsonrpc": "2.0", "id": first["id"], "result": {}}])

    with (
        NodeClient(URL, transport=httpx.MockTransport(partial)) as rpc,
        pytest.raises(InvalidResponse, match="lacks id"),
    ):
        rpc.call_batch([("heights", None), ("properties", None)])


def test_connect_errors_are_retryable_service_unavailable() -> None:
    with (
        NodeClient("http://127.0.0.1:1/v2", timeout_s=2) as rpc,
        pytest.raises(ServiceUnavailable) as caught,
    ):
        rpc.heights()
    assert caught.value.retryable and not caught.value.request_sent
    with pytest.raises(ValueError):
        NodeClient(URL, batch_size=0)
